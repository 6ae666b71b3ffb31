//! MNIST-format data for the tests that train the CNN.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use propulate::cnn::{self, Split};

/// Fashion-MNIST if installed, else a synthetic set in the same format: class k is a bright 6x6
/// square at the k-th of 10 places on a noisy background (learnable, like the real one).
/// `PROPULATE_SYNTHETIC_MNIST=1` forces the synthetic set.
pub fn data_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let real = Path::new(cnn::DEBIAN_FASHION_MNIST);
        if real.is_dir() && std::env::var_os("PROPULATE_SYNTHETIC_MNIST").is_none() {
            return real.to_path_buf();
        }
        eprintln!("using synthetic MNIST-format data instead of {}", real.display());
        let dir = std::env::temp_dir().join(format!("propulate-synthetic-mnist-{}", std::process::id()));
        for (split, n) in [(Split::Train, 2000), (Split::Test, 1000)] {
            let mut noise = 12345u64 + n as u64;
            let mut pixels = Vec::with_capacity(n * 784);
            let labels: Vec<u8> = (0..n).map(|i| (i * 7 % 10) as u8).collect();
            for &label in &labels {
                let (top, left) = (2 + 12 * (label as usize / 5), 1 + 5 * (label as usize % 5));
                for r in 0..28 {
                    for c in 0..28 {
                        noise = noise.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                        let inside = (top..top + 6).contains(&r) && (left..left + 6).contains(&c);
                        pixels.push(if inside { 200 } else { (noise >> 61) as u8 * 8 });
                    }
                }
            }
            let set = cnn::ImageSet { rows: 28, cols: 28, pixels, labels };
            cnn::idx::save(&dir, split, &set, true).unwrap();
        }
        dir
    })
    .as_path()
}
