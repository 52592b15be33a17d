//! Writing a file so that readers see either the old one or the whole new
//! one, never half of it.
//!
//! We write to a hidden temporary file in the same directory, flush it to
//! disk, and only then rename it over the target (a rename within one file
//! system is atomic). If anything fails — or the process is interrupted
//! before [`AtomicFile::commit`] — the temporary file is removed and the
//! target is untouched.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use super::error::ConvertError;

/// A temporary file that becomes `target` on [`commit`](Self::commit).
#[derive(Debug)]
pub(crate) struct AtomicFile {
    target: PathBuf,
    temp: PathBuf,
    file: File,
    committed: bool,
}

impl AtomicFile {
    /// Creates `.<name>.partial-<pid>` next to `target`.
    pub(crate) fn create(target: &Path) -> Result<AtomicFile, ConvertError> {
        let name = target.file_name().ok_or_else(|| ConvertError::Io {
            action: "write",
            path: target.to_path_buf(),
            source: io::Error::new(
                io::ErrorKind::InvalidInput,
                "the output path has no file name",
            ),
        })?;
        let mut temp_name = std::ffi::OsString::from(".");
        temp_name.push(name);
        temp_name.push(format!(".partial-{}", std::process::id()));
        let temp = target.with_file_name(temp_name);
        // The folder too, the first time (the setup's speech directory).
        if let Some(dir) = target.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| ConvertError::Io {
                action: "create the folder of",
                path: target.to_path_buf(),
                source,
            })?;
        }
        let file = File::create(&temp).map_err(|source| ConvertError::Io {
            action: "create",
            path: temp.clone(),
            source,
        })?;
        Ok(AtomicFile {
            target: target.to_path_buf(),
            temp,
            file,
            committed: false,
        })
    }

    /// The temporary file's path.
    pub(crate) fn temp_path(&self) -> &Path {
        &self.temp
    }

    /// The open temporary file.
    pub(crate) fn file(&self) -> &File {
        &self.file
    }

    /// An `Io` error about the temporary file.
    pub(crate) fn error(&self, action: &'static str, source: io::Error) -> ConvertError {
        ConvertError::Io {
            action,
            path: self.temp.clone(),
            source,
        }
    }

    /// Flushes the data to disk and renames the file into place.
    pub(crate) fn commit(mut self) -> Result<(), ConvertError> {
        self.file.sync_all().map_err(|e| self.error("flush", e))?;
        fs::rename(&self.temp, &self.target).map_err(|source| ConvertError::Io {
            action: "rename into place",
            path: self.target.clone(),
            source,
        })?;
        // Make the rename itself durable; not all systems can, so best effort.
        if let Some(dir) = self.target.parent().filter(|d| !d.as_os_str().is_empty()) {
            if let Ok(d) = File::open(dir) {
                let _ = d.sync_all();
            }
        }
        self.committed = true;
        Ok(())
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if !self.committed {
            let _ = fs::remove_file(&self.temp);
        }
    }
}
