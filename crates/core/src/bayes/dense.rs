//! The dense linear algebra of a process's fit, written for speed: the Cholesky factor, the inverse
//! of a triangle and the inverse of a covariance, each an O(n^3) loop run dozens of times per
//! child. Their inner loops are plain element-wise updates and fixed-order sums, so they give the
//! same bits on every CPU; where the CPU has AVX2 (detected once at run time) the same loops are
//! compiled for it, four numbers per instruction instead of the two of the portable x86-64
//! baseline a wheel or a binary is built for.
//!
//! Matrices are nalgebra's column-major `DMatrix`; every loop walks a column, contiguous in memory.

use nalgebra::DMatrix;

/// Defines `run(args)`: `$portable(args)` compiled for AVX2 where the CPU has it, else as built.
macro_rules! dispatch {
    ($portable:ident, $avx2:ident, ($($arg:ident: $ty:ty),*) -> $ret:ty) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2")]
        fn $avx2($($arg: $ty),*) -> $ret {
            $portable($($arg),*)
        }

        #[allow(unreachable_code)]
        pub(super) fn run($($arg: $ty),*) -> $ret {
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2, checked just above.
                return unsafe { $avx2($($arg),*) };
            }
            $portable($($arg),*)
        }
    };
}

/// The Cholesky factor L of the symmetric positive definite `k` (K = L L^T), in place: L on and
/// below the diagonal, what was above left as it was. Reads only K's lower triangle. `false`
/// (and `k` half overwritten) when K is not positive definite. The algorithm and the order of
/// every operation are nalgebra's `Cholesky::new`, so the factor is the same to the bit.
pub(crate) fn cholesky_in_place(k: &mut DMatrix<f64>) -> bool {
    let n = k.nrows();
    assert_eq!(n, k.ncols(), "a square matrix");
    mod kernel {
        #[inline(always)]
        pub(super) fn portable(k: &mut [f64], n: usize) -> bool {
            for j in 0..n {
                let (before, from_j) = k.split_at_mut(j * n);
                let column = &mut from_j[j..n];
                for c in 0..j {
                    let factor = before[c * n + j];
                    for (y, x) in column.iter_mut().zip(&before[c * n + j..(c + 1) * n]) {
                        *y -= factor * x;
                    }
                }
                let diagonal = column[0];
                if diagonal.is_nan() || diagonal <= 0.0 {
                    return false;
                }
                let root = diagonal.sqrt();
                column[0] = root;
                for y in &mut column[1..] {
                    *y /= root;
                }
            }
            true
        }
        dispatch!(portable, avx2, (k: &mut [f64], n: usize) -> bool);
    }
    kernel::run(k.as_mut_slice(), n)
}

/// The inverse of the lower-triangular matrix read from `l`'s lower triangle and diagonal (what
/// lies above is ignored: nalgebra's Cholesky leaves garbage there), by forward substitution
/// column by column, each column from its diagonal down (the identity's zeros above it stay zero).
pub(crate) fn lower_inverse(l: &DMatrix<f64>) -> DMatrix<f64> {
    let n = l.nrows();
    let mut inverse = DMatrix::zeros(n, n);
    mod kernel {
        #[inline(always)]
        pub(super) fn portable(l: &[f64], inverse: &mut [f64], n: usize) {
            for j in 0..n {
                let column = &mut inverse[j * n..(j + 1) * n];
                column[j] = 1.0;
                for k in j..n {
                    let xk = column[k] / l[k * n + k];
                    column[k] = xk;
                    for (x, lik) in column[k + 1..].iter_mut().zip(&l[k * n + k + 1..(k + 1) * n]) {
                        *x -= xk * lik;
                    }
                }
            }
        }
        dispatch!(portable, avx2, (l: &[f64], inverse: &mut [f64], n: usize) -> ());
    }
    kernel::run(l.as_slice(), inverse.as_mut_slice(), n);
    inverse
}

/// Above this size [`cholesky_and_inverse`] works by halves.
const BY_HALVES_ABOVE: usize = 48;

/// The Cholesky factor L of `k` (read on and below its diagonal) and L^-1, both with zeros above
/// the diagonal; `None` when K is not positive definite. Small matrices column by column; larger
/// ones by halves, K = [A, B^T; B, C]: L11 = chol(A), L21 = B L11^-T, L22 = chol(C - L21 L21^T),
/// and (L^-1)21 = -L22^-1 L21 L11^-1, so that most of the work is matrix products, which
/// matrixmultiply computes with the CPU's widest vectors and blocks that stay in cache.
pub(crate) fn cholesky_and_inverse(k: &DMatrix<f64>) -> Option<(DMatrix<f64>, DMatrix<f64>)> {
    let n = k.nrows();
    if n <= BY_HALVES_ABOVE {
        let mut l = k.clone();
        if !cholesky_in_place(&mut l) {
            return None;
        }
        l.fill_upper_triangle(0.0, 1);
        let inverse = lower_inverse(&l);
        return Some((l, inverse));
    }
    let (h, r) = (n / 2, n - n / 2);
    let (l11, m11) = cholesky_and_inverse(&k.view((0, 0), (h, h)).into_owned())?;
    let l21 = k.view((h, 0), (r, h)) * m11.transpose();
    let mut schur = k.view((h, h), (r, r)).into_owned();
    schur.gemm(-1.0, &l21, &l21.transpose(), 1.0);
    let (l22, m22) = cholesky_and_inverse(&schur)?;
    let m21 = -(&m22 * (&l21 * &m11));
    let mut l = DMatrix::zeros(n, n);
    let mut inverse = DMatrix::zeros(n, n);
    for (whole, (top, below, corner)) in [(&mut l, (&l11, &l21, &l22)), (&mut inverse, (&m11, &m21, &m22))] {
        whole.view_mut((0, 0), (h, h)).copy_from(top);
        whole.view_mut((h, 0), (r, h)).copy_from(below);
        whole.view_mut((h, h), (r, r)).copy_from(corner);
    }
    Some((l, inverse))
}

/// The lower triangle and diagonal of K^-1 = L^-T L^-1 from `inverse_l` = L^-1 (lower-triangular,
/// zeros above); above the diagonal, whatever is quickest to compute. Large matrices by halves,
/// M = L^-1 = [M11, 0; M21, M22]: (K^-1)11 = M11^T M11 + M21^T M21, (K^-1)21 = M22^T M21,
/// (K^-1)22 = M22^T M22; small ones by [`gram_of_lower`].
pub(crate) fn spd_inverse_lower(inverse_l: &DMatrix<f64>) -> DMatrix<f64> {
    let n = inverse_l.nrows();
    if n <= BY_HALVES_ABOVE {
        return gram_of_lower(inverse_l);
    }
    let (h, r) = (n / 2, n - n / 2);
    let m21 = inverse_l.view((h, 0), (r, h));
    let m22 = inverse_l.view((h, h), (r, r)).into_owned();
    let mut top = spd_inverse_lower(&inverse_l.view((0, 0), (h, h)).into_owned());
    top.gemm(1.0, &m21.transpose(), &m21, 1.0);
    let below = m22.transpose() * m21;
    let corner = spd_inverse_lower(&m22);
    let mut inverse = DMatrix::zeros(n, n);
    inverse.view_mut((0, 0), (h, h)).copy_from(&top);
    inverse.view_mut((h, 0), (r, h)).copy_from(&below);
    inverse.view_mut((h, h), (r, r)).copy_from(&corner);
    inverse
}

/// M^T M's lower triangle and diagonal for a lower-triangular M (zeros above): entry (i, j),
/// i >= j, is the dot product of M's columns i and j from row i down, contiguous in memory.
fn gram_of_lower(inverse_l: &DMatrix<f64>) -> DMatrix<f64> {
    let n = inverse_l.nrows();
    let mut inverse = DMatrix::zeros(n, n);
    mod kernel {
        #[inline(always)]
        pub(super) fn portable(columns: &[f64], inverse: &mut [f64], n: usize) {
            for j in 0..n {
                let column = &mut inverse[j * n..(j + 1) * n];
                for i in j..n {
                    column[i] = dot(&columns[i * n + i..(i + 1) * n], &columns[j * n + i..(j + 1) * n]);
                }
            }
        }

        /// The dot product with eight running sums in a fixed order, which the compiler can turn
        /// into vector instructions (a single running sum must keep its order and cannot be).
        #[inline(always)]
        fn dot(a: &[f64], b: &[f64]) -> f64 {
            let mut sums = [0.0; 8];
            let (a8, b8) = (a.chunks_exact(8), b.chunks_exact(8));
            let tail: f64 = a8.remainder().iter().zip(b8.remainder()).map(|(x, y)| x * y).sum();
            for (x, y) in a8.zip(b8) {
                for k in 0..8 {
                    sums[k] += x[k] * y[k];
                }
            }
            sums.iter().sum::<f64>() + tail
        }
        dispatch!(portable, avx2, (columns: &[f64], inverse: &mut [f64], n: usize) -> ());
    }
    kernel::run(inverse_l.as_slice(), inverse.as_mut_slice(), n);
    inverse
}

#[cfg(test)]
mod tests {
    use nalgebra::Cholesky;

    use super::*;

    /// A symmetric positive definite matrix of size `n` with garbage above its diagonal.
    fn spd(n: usize) -> DMatrix<f64> {
        let a = DMatrix::from_fn(n, n, |i, j| ((i * 7 + j * 3) % 11) as f64 / 11.0 - 0.4);
        let mut k = &a * a.transpose() + DMatrix::identity(n, n) * 0.5;
        for j in 1..n {
            for i in 0..j {
                k[(i, j)] = 99.0;
            }
        }
        k
    }

    #[test]
    fn the_factor_is_nalgebras_to_the_bit_and_a_matrix_that_is_not_definite_is_refused() {
        for n in [1, 2, 9, 40] {
            let k = spd(n);
            let mut mine = k.clone();
            assert!(cholesky_in_place(&mut mine));
            let theirs = Cholesky::new(k).unwrap().unpack_dirty();
            for j in 0..n {
                for i in j..n {
                    assert_eq!(mine[(i, j)].to_bits(), theirs[(i, j)].to_bits(), "{n}: ({i}, {j})");
                }
            }
        }
        let mut indefinite = DMatrix::from_row_slice(2, 2, &[1.0, 0.0, 2.0, 1.0]);
        assert!(!cholesky_in_place(&mut indefinite));
        assert!(!cholesky_in_place(&mut DMatrix::from_element(1, 1, f64::NAN)));
    }

    #[test]
    fn by_halves_the_factor_and_its_inverse_are_the_column_by_columns() {
        for n in [5, 49, 130] {
            let k = spd(n);
            let (l, inverse) = cholesky_and_inverse(&k).unwrap();
            let mut expected = k.clone();
            assert!(cholesky_in_place(&mut expected));
            expected.fill_upper_triangle(0.0, 1);
            assert!((&l - &expected).abs().max() < 1e-10, "{n}");
            assert!((&l * &inverse - DMatrix::identity(n, n)).abs().max() < 1e-10, "{n}");
            assert!(inverse.upper_triangle().abs().max() == inverse.diagonal().abs().max(), "zeros above, {n}");
        }
        let mut indefinite = spd(100);
        indefinite[(80, 80)] = -1.0;
        assert!(cholesky_and_inverse(&indefinite).is_none());
    }

    #[test]
    fn the_inverses_of_the_triangle_and_of_the_covariance() {
        for n in [1, 3, 17, 120] {
            let mut l = spd(n);
            assert!(cholesky_in_place(&mut l));
            let inverse_l = lower_inverse(&l);
            let inverse = spd_inverse_lower(&inverse_l);
            l.fill_upper_triangle(0.0, 1);
            assert!((&l * &inverse_l - DMatrix::identity(n, n)).abs().max() < 1e-10, "L L^-1 = I, {n}");
            let expected = (&l * l.transpose()).try_inverse().unwrap();
            for j in 0..n {
                for i in j..n {
                    assert!(
                        (inverse[(i, j)] - expected[(i, j)]).abs() < 1e-9 * expected.abs().max(),
                        "{n}: ({i}, {j})"
                    );
                }
            }
        }
    }
}
