//! Why our additions cannot go in: the error of the argv merge, shared by
//! the merge and the read of kubelet's own taints.

/// Why our additions cannot go in.
#[derive(Debug)]
pub struct MergeError {
    pub message: String,
    /// The taints kubelet registers from its `--config` file or
    /// `--config-dir` drop-ins could not be read (the file is unreadable,
    /// or holds what this reader cannot follow): the wrapper cannot know
    /// them, so it fails closed (contract::FENCE_KUBELET_CONFIG_UNREADABLE).
    pub config_unreadable: bool,
}

impl std::fmt::Display for MergeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for MergeError {}

pub(super) fn merge_err<T>(msg: impl Into<String>) -> Result<T, MergeError> {
    Err(MergeError {
        message: msg.into(),
        config_unreadable: false,
    })
}

pub(super) fn config_unreadable(msg: String) -> MergeError {
    MergeError {
        message: msg,
        config_unreadable: true,
    }
}
