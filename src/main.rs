//! Dispatch only: each subcommand's adapter, from its clap types to the
//! options of the module it drives, lives beside that module.

use std::process::ExitCode;

use kubelet_labeler::cli::{
    completions, explain, facts, iso, man, output, plan, render, sync, validate,
};
use kubelet_labeler::cmdline::{Cmd, IsoCmd, RenderCmd};

fn main() -> ExitCode {
    let cmd = match output::parse() {
        Ok(cmd) => cmd,
        Err(code) => return code,
    };
    // One budget of unpacked file contents for the whole run, whatever the
    // command reads (plan and iso fleet bound theirs within it), and one of
    // the files it reads (every file of a directory given counted).
    let result = render::input::with_input_budget(render::input::INPUT_BUDGET, || {
        render::layout::with_run_budget(
            render::layout::RUN_BUDGET,
            "give fewer MachineConfigs, or fewer or smaller gzip'ed files in them",
            || match cmd {
                Cmd::Explain(c) => explain::command::run(c),
                Cmd::Validate(c) => validate::command::run(c),
                Cmd::Render(RenderCmd::Dropins(c)) => render::command::dropins(c),
                Cmd::Render(RenderCmd::Machineconfig(c)) => render::command::machineconfig(c),
                Cmd::Render(RenderCmd::Ignition(c)) => render::command::ignition(c),
                Cmd::Iso(IsoCmd::Embed(c)) => iso::command::embed(c),
                Cmd::Iso(IsoCmd::Show(c)) => iso::command::show(c),
                Cmd::Iso(IsoCmd::Remove(c)) => iso::command::remove(c),
                Cmd::Iso(IsoCmd::Fleet(c)) => iso::command::fleet(c),
                Cmd::Facts(c) => facts::run(c),
                Cmd::Sync(c) => sync::run(c),
                Cmd::Plan(c) => plan::command::run(c),
                Cmd::Completions(c) => completions::run(c),
                Cmd::Man(c) => man::run(c),
            },
        )
    });
    output::exit_code(result)
}
