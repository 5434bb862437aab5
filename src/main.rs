fn main() {
    std::process::exit(anvil::cli::main());
}
