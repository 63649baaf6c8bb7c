//! The node side's error: a message and the error it is about, printed as
//! anyhow prints its errors (`{}` the message alone, `{:#}` the chain
//! joined by ": "), without anyhow's machinery (its vtables, the `Debug` of
//! every wrapped type, backtrace-ready boxes): the wrapper is carried in
//! MachineConfigs and every byte counts (benches/payload.sh). The CLI's
//! anyhow takes it as any other `std::error::Error`, chain included.

use std::fmt;

/// A message, and what caused it (`source`).
pub struct Error {
    msg: String,
    source: Option<Box<Error>>,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An error of `msg` alone (anyhow's `anyhow!`, `bail!`).
    pub fn msg(msg: String) -> Error {
        Error { msg, source: None }
    }

    /// `self` under the message `msg` (anyhow's `context`).
    #[inline(never)]
    pub fn wrap(self, msg: String) -> Error {
        Error {
            msg,
            source: Some(Box::new(self)),
        }
    }

    fn chain(&self) -> impl Iterator<Item = &Error> {
        std::iter::successors(Some(self), |e| e.source.as_deref())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !f.alternate() {
            return f.write_str(&self.msg);
        }
        let mut sep = "";
        for e in self.chain() {
            f.write_str(sep)?;
            f.write_str(&e.msg)?;
            sep = ": ";
        }
        Ok(())
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:#}")
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_deref().map(|e| e as _)
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Error {
        Error::msg(e.to_string())
    }
}

impl From<crate::node::kubelet::taints::TaintError> for Error {
    fn from(e: crate::node::kubelet::taints::TaintError) -> Error {
        Error::msg(e.to_string())
    }
}

/// anyhow's `Context` for the node side's results and options.
pub trait Context<T> {
    fn context(self, msg: impl fmt::Display) -> Result<T>;
    fn with_context<M: fmt::Display>(self, msg: impl FnOnce() -> M) -> Result<T>;
}

impl<T, E: Into<Error>> Context<T> for std::result::Result<T, E> {
    fn context(self, msg: impl fmt::Display) -> Result<T> {
        self.map_err(|e| e.into().wrap(msg.to_string()))
    }
    fn with_context<M: fmt::Display>(self, msg: impl FnOnce() -> M) -> Result<T> {
        self.map_err(|e| e.into().wrap(msg().to_string()))
    }
}

impl<T> Context<T> for Option<T> {
    fn context(self, msg: impl fmt::Display) -> Result<T> {
        self.ok_or_else(|| Error::msg(msg.to_string()))
    }
    fn with_context<M: fmt::Display>(self, msg: impl FnOnce() -> M) -> Result<T> {
        self.ok_or_else(|| Error::msg(msg().to_string()))
    }
}

/// anyhow's `anyhow!`: an [`Error`] of a formatted message.
#[macro_export]
macro_rules! node_error {
    ($($t:tt)*) => {
        $crate::node::error::Error::msg(format!($($t)*))
    };
}

/// anyhow's `bail!`: return an [`Error`] of a formatted message.
#[macro_export]
macro_rules! node_bail {
    ($($t:tt)*) => {
        return Err($crate::node_error!($($t)*))
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Printed as anyhow prints the same chain, through the CLI's anyhow
    /// too.
    #[test]
    fn prints_as_anyhow() {
        let io = std::io::Error::from_raw_os_error(2);
        let ours = Err::<(), _>(io)
            .context("reading x")
            .context("loading y")
            .unwrap_err();
        let theirs = anyhow::Context::context(
            anyhow::Context::context(
                Err::<(), _>(std::io::Error::from_raw_os_error(2)),
                "reading x",
            ),
            "loading y",
        )
        .unwrap_err();
        assert_eq!(ours.to_string(), theirs.to_string());
        assert_eq!(format!("{ours:#}"), format!("{theirs:#}"));
        let through = anyhow::Error::from(ours);
        assert_eq!(format!("{through:#}"), format!("{theirs:#}"));
        let none: Result<()> = None.with_context(|| "no value");
        assert_eq!(format!("{:#}", none.unwrap_err()), "no value");
    }
}
