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

/// The most data one idx file may declare: 8 GiB, far above any MNIST-format set (Fashion-MNIST's
/// training images are 47 MB). A header promising more is refused before anything is allocated, so
/// that a damaged header or a gzip bomb cannot exhaust memory.
pub const MAX_DATA_BYTES: u64 = 8 << 30;

/// Read the idx file at `path` (plain or gzipped) of unsigned bytes with `rank` dimensions: its
/// dimensions and its data. The header is read first; then exactly the data it promises, never more
/// than [`MAX_DATA_BYTES`], so a file that holds more or less than its header says is an error
/// naming both sizes.
fn read_idx(path: &Path, rank: u8) -> Result<(Vec<usize>, Vec<u8>)> {
    let bad = |what: String| Error::Data(format!("{}: {what}", path.display()));
    let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut magic = [0u8; 2];
    let sniffed = read_up_to(&mut file, &mut magic).map_err(|e| Error::io(path, e))?;
    let head = std::io::Cursor::new(magic[..sniffed].to_vec());
    let mut reader: Box<dyn Read> = if magic[..sniffed] == [0x1f, 0x8b] {
        Box::new(flate2::read::GzDecoder::new(head.chain(file)))
    } else {
        Box::new(head.chain(file))
    };
    let unreadable = |e: std::io::Error| bad(format!("cannot be read (a damaged or foreign gzip file?): {e}"));
    let mut header = vec![0u8; 4 + 4 * rank as usize];
    let got = read_up_to(&mut reader, &mut header).map_err(unreadable)?;
    if got < 4 || header[0] != 0 || header[1] != 0 {
        return Err(bad("not an idx file (the magic number must start with two zero bytes)".into()));
    }
    if header[2] != 0x08 || header[3] != rank {
        return Err(bad(format!(
            "expected unsigned bytes of rank {rank} (magic 0x080{rank}), found type 0x{:02x} and rank {}",
            header[2], header[3]
        )));
    }
    if got < header.len() {
        return Err(bad(format!("the header is cut off at {got} bytes")));
    }
    let dims: Vec<usize> = (0..rank as usize)
        .map(|d| u32::from_be_bytes(header[4 + 4 * d..8 + 4 * d].try_into().expect("4 bytes")) as usize)
        .collect();
    let expected = dims
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d as u64))
        .filter(|&n| n <= MAX_DATA_BYTES)
        .ok_or_else(|| bad(format!("the header's dimensions {dims:?} promise more than {MAX_DATA_BYTES} bytes")))?;
    if dims.contains(&0) {
        return Err(bad(format!("the header's dimensions {dims:?} hold no data")));
    }
    // Read one byte more than promised to tell an exact file from a longer one; the vector grows
    // with what actually arrives.
    let mut data = Vec::new();
    reader.take(expected + 1).read_to_end(&mut data).map_err(unreadable)?;
    if data.len() as u64 != expected {
        let has = if data.len() as u64 > expected { "more".to_string() } else { data.len().to_string() };
        return Err(bad(format!("the header promises {expected} bytes of data ({dims:?}), the file has {has}")));
    }
    Ok((dims, data))
}

/// Fill `buf` as far as the reader goes; the number of bytes read.
fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
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
    let (dims, pixels) = read_idx(&images_path, 3)?;
    let (ldims, labels) = read_idx(&labels_path, 1)?;
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

/// Check that a training and a validation set fit one network: the same image size.
pub fn check_compatible(train: &ImageSet, valid: &ImageSet) -> Result<()> {
    if (train.rows, train.cols) != (valid.rows, valid.cols) {
        return Err(Error::Data(format!(
            "the training images are {}x{} but the validation images {}x{}; one network cannot take both",
            train.rows, train.cols, valid.rows, valid.cols
        )));
    }
    Ok(())
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

    fn gz(bytes: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(bytes).unwrap();
        enc.finish().unwrap()
    }

    #[test]
    fn hostile_headers_and_gzip_bombs_are_refused_without_allocating_what_they_claim() {
        let tmp = tempfile::tempdir().unwrap();
        save(tmp.path(), Split::Train, &sample(4), false).unwrap();
        let images = tmp.path().join("train-images-idx3-ubyte");
        // 2^32-1 cubed overflows 64 bits; 2^32-1 squared times 2 is far above the cap.
        for dims in [[u32::MAX; 3], [u32::MAX, u32::MAX, 2]] {
            let mut bytes = vec![0, 0, 8, 3];
            dims.iter().for_each(|d| bytes.extend(d.to_be_bytes()));
            std::fs::write(&images, &bytes).unwrap();
            let e = load(tmp.path(), Split::Train).unwrap_err().to_string();
            assert!(e.contains("promise more than 8589934592 bytes"), "{e}");
        }
        std::fs::write(&images, [0, 0, 8, 3, 0, 0, 0, 0, 0, 0, 0, 28, 0, 0, 0, 28]).unwrap();
        let e = load(tmp.path(), Split::Train).unwrap_err().to_string();
        assert!(e.contains("hold no data"), "{e}");
        // A header promising 24 bytes followed by 64 MiB of zeros, gzipped to a few kB.
        let mut bomb = vec![0, 0, 8, 3, 0, 0, 0, 4, 0, 0, 0, 3, 0, 0, 0, 2];
        bomb.resize(bomb.len() + (64 << 20), 0);
        std::fs::remove_file(&images).unwrap();
        std::fs::write(tmp.path().join("train-images-idx3-ubyte.gz"), gz(&bomb)).unwrap();
        let e = load(tmp.path(), Split::Train).unwrap_err().to_string();
        assert!(e.contains("promises 24 bytes of data ([4, 3, 2]), the file has more"), "{e}");
    }

    #[test]
    fn sets_of_different_image_sizes_are_incompatible() {
        let mut other = sample(2);
        other.rows = 2;
        other.cols = 3;
        assert!(check_compatible(&sample(2), &sample(5)).is_ok());
        let e = check_compatible(&sample(2), &other).unwrap_err().to_string();
        assert!(e.contains("3x2 but the validation images 2x3"), "{e}");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
        /// Damaged files, plain or gzipped: an error or a set, never a panic.
        #[test]
        fn mutated_idx_files_never_panic(
            flips in proptest::collection::vec((0usize..200, proptest::prelude::any::<u8>()), 0..6),
            cut in 0usize..200,
            gzip in proptest::prelude::any::<bool>(),
        ) {
            let tmp = tempfile::tempdir().unwrap();
            save(tmp.path(), Split::Test, &sample(5), false).unwrap();
            for stem in ["t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"] {
                let path = tmp.path().join(stem);
                let mut bytes = std::fs::read(&path).unwrap();
                for &(at, value) in &flips {
                    let len = bytes.len();
                    if let Some(b) = bytes.get_mut(at % (len + 1)) {
                        *b = value;
                    }
                }
                // Half the cases lose up to 100 bytes at the end, header included for the labels.
                if cut < 100 {
                    bytes.truncate(bytes.len().saturating_sub(cut));
                }
                if gzip {
                    std::fs::remove_file(&path).unwrap();
                    std::fs::write(tmp.path().join(format!("{stem}.gz")), gz(&bytes)).unwrap();
                } else {
                    std::fs::write(&path, &bytes).unwrap();
                }
            }
            if let Ok(set) = load(tmp.path(), Split::Test) {
                proptest::prop_assert_eq!(set.pixels.len(), set.len() * set.rows * set.cols);
            }
        }
    }
}
