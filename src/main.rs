// Planning a large recipe allocates millions of small values (KDL nodes,
// JSON preimages); mimalloc makes that about a third cheaper than glibc's
// malloc (benches/spine).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    // Like other command-line tools, stop quietly when the reader of our
    // output goes away (`anvil plan --json | head`).
    // SAFETY: setting a signal's disposition to the default is async-signal-safe and done before any thread starts.
    unsafe {
        let _ =
            nix::sys::signal::signal(nix::sys::signal::Signal::SIGPIPE, nix::sys::signal::SigHandler::SigDfl);
    }
    std::process::exit(anvil::main());
}
