//! A Parquet [`ChunkReader`] over a local file that counts every byte and
//! request the reader makes of it, footer and metadata included.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use parquet::errors::{ParquetError, Result};
use parquet::file::reader::{ChunkReader, Length};

/// Bytes and requests made of one or more files.
#[derive(Debug, Default)]
pub(crate) struct IoCounter {
    bytes: AtomicU64,
    requests: AtomicU64,
}

impl IoCounter {
    /// Bytes handed to the reader so far.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// `get_bytes` and `get_read` calls so far.
    pub(crate) fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    fn add(&self, bytes: u64) {
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    fn request(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
    }
}

/// A file whose reads are counted.
///
/// `get_bytes` counts the bytes returned. `get_read` (the parquet crate uses
/// it for footers and page headers, which it decodes from a stream) counts
/// the bytes the reader consumes from the stream, not the read-ahead of the
/// `BufReader` underneath: that buffer size is an artefact of local files,
/// while an object store reader fetches exact ranges.
#[derive(Debug)]
pub(crate) struct CountingFile {
    file: File,
    len: u64,
    counter: Arc<IoCounter>,
}

impl CountingFile {
    pub(crate) fn open(path: &Path, counter: Arc<IoCounter>) -> std::io::Result<Self> {
        let file = File::open(path)?;
        let len = file.metadata()?.len();
        Ok(Self { file, len, counter })
    }
}

impl Length for CountingFile {
    fn len(&self) -> u64 {
        self.len
    }
}

impl ChunkReader for CountingFile {
    type T = CountingRead<BufReader<File>>;

    fn get_read(&self, start: u64) -> Result<Self::T> {
        self.counter.request();
        let mut file = self.file.try_clone()?;
        file.seek(SeekFrom::Start(start))?;
        Ok(CountingRead {
            inner: BufReader::new(file),
            counter: self.counter.clone(),
        })
    }

    fn get_bytes(&self, start: u64, length: usize) -> Result<Bytes> {
        self.counter.request();
        let mut file = self.file.try_clone()?;
        file.seek(SeekFrom::Start(start))?;
        let mut buffer = Vec::with_capacity(length);
        let read = file.take(length as u64).read_to_end(&mut buffer)?;
        if read != length {
            return Err(ParquetError::EOF(format!(
                "expected {length} bytes at offset {start}, read {read}"
            )));
        }
        self.counter.add(read as u64);
        Ok(buffer.into())
    }
}

/// A stream from a [`CountingFile`] that counts what is read from it.
#[derive(Debug)]
pub(crate) struct CountingRead<R> {
    inner: R,
    counter: Arc<IoCounter>,
}

impl<R: Read> Read for CountingRead<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let read = self.inner.read(buf)?;
        self.counter.add(read as u64);
        Ok(read)
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    #[test]
    fn counts_ranges_and_consumed_stream_bytes() {
        let mut tmp = tempfile::NamedTempFile::new().unwrap();
        tmp.write_all(&[7u8; 100_000]).unwrap();
        let counter = Arc::new(IoCounter::default());
        let file = CountingFile::open(tmp.path(), counter.clone()).unwrap();
        assert_eq!(file.len(), 100_000);
        assert_eq!(file.get_bytes(10, 300).unwrap().len(), 300);
        let mut stream = file.get_read(99_990).unwrap();
        let mut four = [0u8; 4];
        stream.read_exact(&mut four).unwrap();
        assert_eq!((counter.bytes(), counter.requests()), (304, 2));
        assert!(file.get_bytes(99_990, 20).is_err());
    }
}
