// Planning a large recipe allocates millions of small values (KDL nodes,
// JSON preimages); mimalloc makes that about a third cheaper than glibc's
// malloc (benches/spine). Built without its transparent-huge-page advice
// (`no_thp`): where the kernel honours that advice by compacting memory to
// fault a 2 MB page in, planning 100,000 steps took 1.4-2.1 s (1.6 s
// steady without), and a no-op rerun spent a fifth of its time zeroing
// huge pages it barely used.
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
