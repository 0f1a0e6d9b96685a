//! `status`: the daemon and every project; never waits for a busy project.

use std::sync::Arc;

use ckpt_proto::{DaemonInfo, StatusReply, WirePath, PROTOCOL_VERSION};

use crate::backend::Shape;
use crate::daemon::Daemon;

pub fn handle(d: &Arc<Daemon>) -> StatusReply {
    StatusReply {
        daemon: DaemonInfo {
            pid: std::process::id(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            protocol: PROTOCOL_VERSION,
            uptime_s: d.started.elapsed().as_secs(),
            socket: WirePath::from(d.config.socket.as_path()),
            data_dir: WirePath::from(d.config.data_dir.as_path()),
            watcher: d.watcher.shape().map_or("none", Shape::name).to_string(),
            config_error: d.user_settings.error(),
            watches: d.watcher.watch_count(),
        },
        projects: super::projects::all(d),
    }
}
