use anyhow::Result;
use clap::Parser;

use kubelet_labeler::cmdline::Cmd;

fn main() -> Result<()> {
    match Cmd::parse() {
        c => anyhow::bail!("not implemented yet: {c:?}"),
    }
}
