//! The catalog: which files hold what, persisted atomically as `catalog.json`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use schemas::FileEntry;
use serde::{Deserialize, Serialize};

use crate::{Error, Result};

const FORMAT: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize)]
struct State {
    format: u32,
    /// Every WAL record in segments up to this one is in the files below.
    flushed_wal_segment: u64,
    next_file_id: u64,
    files: Vec<FileEntry>,
}

/// The catalog of one telemetry root.
#[derive(Debug)]
pub(crate) struct Catalog {
    root: PathBuf,
    state: State,
}

impl Catalog {
    /// Reads `root/catalog.json` (or starts empty) and deletes Parquet files
    /// under `root` it does not list: a crash between writing a file and
    /// committing the catalog leaves such orphans, whose rows are still in the WAL.
    pub(crate) fn open(root: &Path) -> Result<Self> {
        std::fs::create_dir_all(root).map_err(Error::io("creating", root))?;
        let path = root.join("catalog.json");
        let state = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|source| Error::Catalog {
                path: path.clone(),
                source,
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => State {
                format: FORMAT,
                flushed_wal_segment: 0,
                next_file_id: 1,
                files: Vec::new(),
            },
            Err(e) => return Err(Error::io("reading", &path)(e)),
        };
        let catalog = Self {
            root: root.to_owned(),
            state,
        };
        catalog.remove_orphans()?;
        Ok(catalog)
    }

    fn remove_orphans(&self) -> Result<()> {
        let listed: HashSet<PathBuf> = self
            .state
            .files
            .iter()
            .map(|f| self.root.join(&f.path))
            .collect();
        let days = std::fs::read_dir(&self.root).map_err(Error::io("listing", &self.root))?;
        for day in days {
            let day = day.map_err(Error::io("listing", &self.root))?.path();
            if !day.is_dir() {
                continue;
            }
            for file in std::fs::read_dir(&day).map_err(Error::io("listing", &day))? {
                let file = file.map_err(Error::io("listing", &day))?.path();
                let stray = file
                    .extension()
                    .is_some_and(|e| e == "parquet" || e == "tmp");
                if stray && !listed.contains(&file) {
                    tracing::warn!(path = %file.display(), "removing a file the catalog does not list");
                    std::fs::remove_file(&file).map_err(Error::io("removing", &file))?;
                }
            }
        }
        Ok(())
    }

    pub(crate) fn files(&self) -> &[FileEntry] {
        &self.state.files
    }

    pub(crate) fn flushed_wal_segment(&self) -> u64 {
        self.state.flushed_wal_segment
    }

    /// Reserves a file id.
    pub(crate) fn next_file_id(&mut self) -> u64 {
        let id = self.state.next_file_id;
        self.state.next_file_id += 1;
        id
    }

    /// Adds and removes files (and advances the flushed WAL segment) in one
    /// atomic replacement of `catalog.json`. Returns the paths of the removed
    /// files, which the caller deletes once no reader holds them.
    pub(crate) fn commit(
        &mut self,
        add: Vec<FileEntry>,
        remove: &[u64],
        flushed_wal_segment: Option<u64>,
    ) -> Result<Vec<PathBuf>> {
        let mut next = self.state.clone();
        next.files.retain(|f| !remove.contains(&f.id));
        next.files.extend(add);
        if let Some(segment) = flushed_wal_segment {
            next.flushed_wal_segment = next.flushed_wal_segment.max(segment);
        }
        let path = self.root.join("catalog.json");
        let tmp = self.root.join("catalog.json.tmp");
        let bytes = serde_json::to_vec(&next).map_err(|source| Error::Catalog {
            path: path.clone(),
            source,
        })?;
        write_durably(&tmp, &bytes)?;
        std::fs::rename(&tmp, &path).map_err(Error::io("renaming", &path))?;
        sync_dir(&self.root)?;
        let removed: Vec<PathBuf> = self
            .state
            .files
            .iter()
            .filter(|f| remove.contains(&f.id))
            .map(|f| self.root.join(&f.path))
            .collect();
        self.state = next;
        Ok(removed)
    }
}

/// Writes a file and fsyncs it.
pub(crate) fn write_durably(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let mut file = std::fs::File::create(path).map_err(Error::io("creating", path))?;
    file.write_all(bytes).map_err(Error::io("writing", path))?;
    file.sync_all().map_err(Error::io("syncing", path))
}

/// fsyncs a directory, so that a rename or creation in it survives power loss.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(Error::io("syncing directory", dir))
}
