//! MNIST-format (idx) files: the images and labels of MNIST, Fashion-MNIST and their kin, plain or
//! gzipped. An idx file is a big-endian header (magic 0x0803 for u8 images of rank 3, 0x0801 for
//! u8 labels of rank 1, then one u32 per dimension) followed by the bytes.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Where Debian's `dataset-fashion-mnist` package puts Fashion-MNIST.
pub const DEBIAN_FASHION_MNIST: &str = "/usr/share/datasets/fashion-mnist";

/// A labelled image set: `len` images of `rows` x `cols` bytes, one label each.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageSet {
    /// Image height in pixels.
    pub rows: usize,
    /// Image width in pixels.
    pub cols: usize,
    /// All pixels, image after image, row-major.
    pub pixels: Vec<u8>,
    /// One class per image.
    pub labels: Vec<u8>,
}

impl ImageSet {
    /// Number of images.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// True if there are no images.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// The pixels of image `i`.
    pub fn image(&self, i: usize) -> &[u8] {
        let n = self.rows * self.cols;
        &self.pixels[i * n..(i + 1) * n]
    }

    /// The first `n` images (all of them if there are fewer).
    pub fn truncated(mut self, n: usize) -> Self {
        let n = n.min(self.len());
        self.labels.truncate(n);
        self.pixels.truncate(n * self.rows * self.cols);
        self
    }
}

/// Which half of the data set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    /// `train-*`: 60000 images in MNIST.
    Train,
    /// `t10k-*`: 10000 images in MNIST.
    Test,
}

fn find(dir: &Path, stem: &str) -> Result<PathBuf> {
    for name in [format!("{stem}.gz"), stem.to_string()] {
        let p = dir.join(name);
        if p.is_file() {
            return Ok(p);
        }
    }
    Err(Error::Data(format!(
        "{}: no {stem} or {stem}.gz (MNIST-format data; on Debian `apt-get install dataset-fashion-mnist` puts \
         Fashion-MNIST in {DEBIAN_FASHION_MNIST})",
        dir.display()
    )))
}

fn read_all(path: &Path) -> Result<Vec<u8>> {
    let raw = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    if raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&raw[..])
            .read_to_end(&mut out)
            .map_err(|e| Error::Data(format!("{}: not a valid gzip file: {e}", path.display())))?;
        Ok(out)
    } else {
        Ok(raw)
    }
}

/// Parse an idx file of unsigned bytes with `rank` dimensions: its dimensions and its data.
fn parse(path: &Path, bytes: &[u8], rank: u8) -> Result<(Vec<usize>, Vec<u8>)> {
    let bad = |what: String| Error::Data(format!("{}: {what}", path.display()));
    if bytes.len() < 4 || bytes[0] != 0 || bytes[1] != 0 {
        return Err(bad("not an idx file (the magic number must start with two zero bytes)".into()));
    }
    if bytes[2] != 0x08 || bytes[3] != rank {
        return Err(bad(format!(
            "expected unsigned bytes of rank {rank} (magic 0x080{rank}), found type 0x{:02x} and rank {}",
            bytes[2], bytes[3]
        )));
    }
    let header = 4 + 4 * rank as usize;
    if bytes.len() < header {
        return Err(bad(format!("the header is cut off at {} bytes", bytes.len())));
    }
    let dims: Vec<usize> = (0..rank as usize)
        .map(|d| u32::from_be_bytes(bytes[4 + 4 * d..8 + 4 * d].try_into().expect("4 bytes")) as usize)
        .collect();
    let expected = dims.iter().product::<usize>();
    let data = &bytes[header..];
    if data.len() != expected {
        return Err(bad(format!(
            "the header promises {expected} bytes of data ({dims:?}), the file has {}",
            data.len()
        )));
    }
    Ok((dims, data.to_vec()))
}

/// Load one split from `dir` (`train-images-idx3-ubyte[.gz]` and `train-labels-idx1-ubyte[.gz]`, or
/// the `t10k-` pair).
pub fn load(dir: &Path, split: Split) -> Result<ImageSet> {
    let prefix = match split {
        Split::Train => "train",
        Split::Test => "t10k",
    };
    let images_path = find(dir, &format!("{prefix}-images-idx3-ubyte"))?;
    let labels_path = find(dir, &format!("{prefix}-labels-idx1-ubyte"))?;
    let (dims, pixels) = parse(&images_path, &read_all(&images_path)?, 3)?;
    let (ldims, labels) = parse(&labels_path, &read_all(&labels_path)?, 1)?;
    if dims[0] != ldims[0] {
        return Err(Error::Data(format!(
            "{} has {} images but {} has {} labels",
            images_path.display(),
            dims[0],
            labels_path.display(),
            ldims[0]
        )));
    }
    if let Some(bad) = labels.iter().position(|&l| l >= 10) {
        return Err(Error::Data(format!(
            "{}: label {} of image {bad} is not a class 0..9",
            labels_path.display(),
            labels[bad]
        )));
    }
    Ok(ImageSet { rows: dims[1], cols: dims[2], pixels, labels })
}

/// Write `set` as an idx pair into `dir` (gzipped when `gzip`): test data and small subsets.
pub fn save(dir: &Path, split: Split, set: &ImageSet, gzip: bool) -> Result<()> {
    use std::io::Write;
    let prefix = match split {
        Split::Train => "train",
        Split::Test => "t10k",
    };
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let mut images = vec![0, 0, 8, 3];
    for d in [set.len(), set.rows, set.cols] {
        images.extend((d as u32).to_be_bytes());
    }
    images.extend(&set.pixels);
    let mut labels = vec![0, 0, 8, 1];
    labels.extend((set.len() as u32).to_be_bytes());
    labels.extend(&set.labels);
    for (stem, bytes) in
        [(format!("{prefix}-images-idx3-ubyte"), images), (format!("{prefix}-labels-idx1-ubyte"), labels)]
    {
        let (path, bytes) = if gzip {
            let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            enc.write_all(&bytes).expect("in memory");
            (dir.join(format!("{stem}.gz")), enc.finish().expect("in memory"))
        } else {
            (dir.join(stem), bytes)
        };
        std::fs::write(&path, bytes).map_err(|e| Error::io(&path, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(n: usize) -> ImageSet {
        ImageSet {
            rows: 3,
            cols: 2,
            pixels: (0..n * 6).map(|i| i as u8).collect(),
            labels: (0..n).map(|i| (i % 10) as u8).collect(),
        }
    }

    #[test]
    fn round_trip_plain_and_gzipped() {
        for gzip in [false, true] {
            let tmp = tempfile::tempdir().unwrap();
            save(tmp.path(), Split::Test, &sample(12), gzip).unwrap();
            let back = load(tmp.path(), Split::Test).unwrap();
            assert_eq!(back, sample(12));
            assert_eq!(back.image(2), &[12, 13, 14, 15, 16, 17]);
            assert_eq!(back.truncated(5).len(), 5);
        }
    }

    #[test]
    fn missing_truncated_and_foreign_files_are_errors_naming_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        let e = load(tmp.path(), Split::Train).unwrap_err().to_string();
        assert!(e.contains("no train-images-idx3-ubyte") && e.contains("dataset-fashion-mnist"), "{e}");

        save(tmp.path(), Split::Train, &sample(4), false).unwrap();
        let images = tmp.path().join("train-images-idx3-ubyte");
        let mut bytes = std::fs::read(&images).unwrap();
        bytes.pop();
        std::fs::write(&images, &bytes).unwrap();
        let e = load(tmp.path(), Split::Train).unwrap_err().to_string();
        assert!(e.contains("train-images-idx3-ubyte: the header promises 24 bytes"), "{e}");

        std::fs::write(&images, b"PK\x03\x04 a zip file").unwrap();
        let e = load(tmp.path(), Split::Train).unwrap_err().to_string();
        assert!(e.contains("not an idx file"), "{e}");

        save(tmp.path(), Split::Train, &sample(4), false).unwrap();
        std::fs::write(tmp.path().join("train-labels-idx1-ubyte"), [0, 0, 8, 1, 0, 0, 0, 3, 1, 2, 3]).unwrap();
        let e = load(tmp.path(), Split::Train).unwrap_err().to_string();
        assert!(e.contains("has 4 images but") && e.contains("has 3 labels"), "{e}");
    }
}
