//! Files a run or `report` writes must not land inside the checkpoint directory under names the
//! checkpoint does not know: it holds only what propulate-rs writes there (so that a typo cannot
//! make a run write journals among someone's data), and the next resume of the same command would
//! refuse the directory for them. `--out CKPT/results`, `--trials-dir CKPT/mine` and
//! `report CKPT --optuna-journal CKPT/study.log` each did that: refused at the start instead.

use propulate::files::place::resolved;
use std::path::Path;

/// An error for the first of `paths` (each with its flag) that lies inside `checkpoint` other than
/// where the checkpoint keeps that kind of file (`allowed`: the checkpoint itself for the result
/// files, its `trials/` for the trials' directories).
pub(crate) fn refuse_inside(checkpoint: &Path, paths: &[(&str, &Path, Option<&Path>)]) -> Result<(), String> {
    let ck = resolved(checkpoint);
    for (flag, path, allowed) in paths {
        let p = resolved(path);
        if p.starts_with(&ck) && allowed.is_none_or(|a| p != resolved(a)) {
            return Err(format!(
                "{flag} {} is inside the checkpoint {}, which holds only what propulate-rs writes there (its next \
                 resume would refuse the directory): choose a place outside it",
                path.display(),
                checkpoint.display()
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_places_inside_the_checkpoint_that_it_does_not_keep_are_refused() {
        let ck = Path::new("runs/ck");
        let ok = |flag, path: &str, allowed: Option<&Path>| refuse_inside(ck, &[(flag, Path::new(path), allowed)]);
        assert!(ok("--out", "runs/ck", Some(ck)).is_ok(), "the result files are the checkpoint's own");
        assert!(ok("--out", "runs/results", Some(ck)).is_ok());
        assert!(ok("--out", "runs/ck2", Some(ck)).is_ok(), "a sibling whose name starts alike");
        let e = ok("--out", "runs/ck/results", Some(ck)).unwrap_err();
        assert!(e.starts_with("--out runs/ck/results is inside the checkpoint runs/ck"), "{e}");
        assert!(ok("--out", "./runs/x/../ck/./results", Some(ck)).is_err(), "spelt another way");
        assert!(ok("--trials-dir", "runs/ck/trials", Some(&ck.join("trials"))).is_ok());
        assert!(ok("--trials-dir", "runs/ck/mine", Some(&ck.join("trials"))).is_err());
        assert!(ok("--optuna-journal", "runs/ck/study.log", None).is_err());
    }
}
