//! The envelope of every reply about one project.

use std::ops::{Deref, DerefMut};

use serde::{Deserialize, Serialize};

use crate::WirePath;

/// A reply about one project: its root, what the operation answered, and
/// why capture for it cannot be fully trusted, if so. The daemon sets
/// `project` and `degraded` in one place for every such reply, so a client
/// can warn on every command. On the wire the body's fields sit between
/// the two, as if the reply were one struct.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Reply<T> {
    pub project: WirePath,
    #[serde(flatten)]
    pub body: T,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded: Option<String>,
}

impl<T> Deref for Reply<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.body
    }
}

impl<T> DerefMut for Reply<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.body
    }
}
