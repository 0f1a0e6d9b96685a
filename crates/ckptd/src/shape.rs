//! Which shape of file watcher the daemon runs (see `backend`): chosen
//! once, at start-up, from the platform and `CKPT_WATCHER`.

/// How the backend watches a project's tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// One non-recursive watch per captured directory (our inotify loop).
    PerDirectory,
    /// One recursive watch per project root (notify's watcher: FSEvents on
    /// macOS, its inotify backend on Linux).
    Recursive,
}

impl Shape {
    /// The platform's shape, or the one `CKPT_WATCHER` names (`inotify` or
    /// `notify`; Linux only, where both exist).
    pub fn from_setting(setting: Option<&str>) -> std::result::Result<Shape, String> {
        match setting.filter(|s| !s.is_empty()) {
            None if cfg!(target_os = "linux") => Ok(Shape::PerDirectory),
            None => Ok(Shape::Recursive),
            Some("inotify") if cfg!(target_os = "linux") => Ok(Shape::PerDirectory),
            Some("notify") => Ok(Shape::Recursive),
            Some(other) => Err(format!(
                "CKPT_WATCHER={other} is not a watcher here (`inotify`, the default on Linux, or `notify`)"
            )),
        }
    }

    /// The name `status` gives the watcher in use.
    pub fn name(self) -> &'static str {
        match self {
            Shape::PerDirectory => "inotify",
            Shape::Recursive => "notify-recursive",
        }
    }
}

/// The shapes this platform has (the per-directory one is Linux's only).
#[cfg(test)]
pub fn available() -> Vec<Shape> {
    if cfg!(target_os = "linux") {
        vec![Shape::PerDirectory, Shape::Recursive]
    } else {
        vec![Shape::Recursive]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setting_picks_a_shape_and_a_typo_is_refused() {
        assert_eq!(Shape::from_setting(Some("notify")), Ok(Shape::Recursive));
        let default = Shape::from_setting(None).unwrap();
        assert_eq!(Shape::from_setting(Some("")), Ok(default));
        if cfg!(target_os = "linux") {
            assert_eq!(default, Shape::PerDirectory);
            assert_eq!(Shape::from_setting(Some("inotify")), Ok(default));
        } else {
            assert_eq!(default, Shape::Recursive);
        }
        let err = Shape::from_setting(Some("fsevent")).unwrap_err();
        assert!(err.contains("CKPT_WATCHER=fsevent"), "{err}");
        assert_eq!(Shape::Recursive.name(), "notify-recursive");
    }
}
