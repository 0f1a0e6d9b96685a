//! The daemon's configuration: where it listens and stores, and the test
//! hooks (`test_hooks.rs`, with the `test-hooks` feature only).

use std::path::PathBuf;

use anyhow::Context;

use ckpt_settings::{Layer, SettingsError};

use crate::shape::Shape;
use crate::test_hooks::TestHooks;

/// Everything `ckptd::run` needs.
#[derive(Clone, Debug)]
pub struct Config {
    pub socket: PathBuf,
    pub data_dir: PathBuf,
    /// The `CKPT_<KEY>` settings in this process's environment.
    pub settings_env: Result<Layer, SettingsError>,
    /// The file watcher's shape (`CKPT_WATCHER`).
    pub watcher: Shape,
    pub hooks: TestHooks,
}

impl Config {
    /// Fills in the defaults for what was not given (flags or `CKPT_*`
    /// variables, which the caller has already read).
    pub fn resolve(socket: Option<PathBuf>, data_dir: Option<PathBuf>) -> anyhow::Result<Config> {
        let socket = socket.unwrap_or_else(ckpt_proto::paths::default_socket);
        let data_dir = match data_dir {
            Some(d) => d,
            None => ckpt_proto::paths::default_data_dir()
                .context("cannot tell the data directory (no home directory); pass --data-dir")?,
        };
        let settings_env = ckpt_settings::env_layer(|n| std::env::var(n).ok());
        let watcher = std::env::var("CKPT_WATCHER").ok();
        let watcher = Shape::from_setting(watcher.as_deref()).map_err(anyhow::Error::msg)?;
        Ok(Config {
            socket: absolute(socket)?,
            data_dir: absolute(data_dir)?,
            settings_env,
            watcher,
            hooks: TestHooks::from_env(),
        })
    }
}

fn absolute(p: PathBuf) -> anyhow::Result<PathBuf> {
    if p.is_absolute() {
        return Ok(p);
    }
    let cwd = std::env::current_dir().context("reading the current directory")?;
    Ok(cwd.join(p))
}
