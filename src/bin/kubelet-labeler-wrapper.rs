//! The boot-time wrapper systemd runs as kubelet.service's `ExecStart`
//! (see `units/`). std only: it is carried in MachineConfigs.
//! `kubelet-labeler-wrapper sync ...` is the day-2 label sync
//! (kubelet-labeler-sync.service): the same binary, so the derivation code
//! ships once.

#[global_allocator]
static ALLOC: kubelet_labeler::node::wrapper::bump::BumpAlloc =
    kubelet_labeler::node::wrapper::bump::BumpAlloc::new();

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    if args.first().is_some_and(|a| a == "sync") {
        // The sync runs for minutes and reads an answer per try: what it
        // frees is freed (the boot path keeps the bump arena).
        ALLOC.free_from_now();
        std::process::exit(kubelet_labeler::node::sync::run::node_main(&args[1..]));
    }
    std::process::exit(kubelet_labeler::node::wrapper::boot::run(&args));
}
