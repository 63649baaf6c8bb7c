//! The boot-time wrapper systemd runs as kubelet.service's `ExecStart`
//! (see `units/`). std only: it is carried in MachineConfigs.

#[global_allocator]
static ALLOC: kubelet_labeler::wrapper::bump::BumpAlloc =
    kubelet_labeler::wrapper::bump::BumpAlloc::new();

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    std::process::exit(kubelet_labeler::wrapper::boot::run(&args));
}
