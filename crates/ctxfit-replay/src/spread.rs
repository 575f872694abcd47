//! How far a figure measured on some sessions (or pages) would move on others like them: the bootstrap —
//! resamples as large as the set, drawn from it with replacement, the figure computed on each, and the
//! percentiles of what it gives. The draws come from a fixed seed, so a report is the same every run.
//!
//! `ctxfit replay` prints each policy's share of the oracle and recall over resamples of the sessions (every
//! policy measured on the same resample: paired), and `cargo xtask eval-html` an extractor's lead over trafilatura
//! over resamples of the pages.

/// Resamples a report draws.
pub const RESAMPLES: usize = 1_000;

/// Resamples of `n` indices drawn with replacement, from a fixed seed: `resamples(n, RESAMPLES)`.
pub struct Resamples {
    state: u64,
    n: usize,
    left: usize,
}

/// `count` resamples of the indices `0..n` (none when `n` is 0).
pub fn resamples(n: usize, count: usize) -> Resamples {
    Resamples {
        state: 0x005E_ED0F_C7F1_7000,
        n,
        left: if n == 0 { 0 } else { count },
    }
}

impl Resamples {
    /// splitmix64: small, and the same numbers on every machine
    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

impl Iterator for Resamples {
    type Item = Vec<usize>;

    fn next(&mut self) -> Option<Vec<usize>> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let n = self.n as u64;
        Some(
            (0..self.n)
                .map(|_| (self.next_u64() % n) as usize)
                .collect(),
        )
    }
}

/// `count` random halves of the indices `0..n`, from a fixed seed: each a mask of the `n / 2` indices drawn (a
/// shuffle's first half). What a figure does on a half of a set is what it would do on a held-out part like it:
/// `cargo xtask fit-reach` keeps the excerpt's reach whose recall holds on all but 5% of the halves.
pub fn halves(n: usize, count: usize) -> impl Iterator<Item = Vec<bool>> {
    let mut draws = resamples(n, 0);
    (0..count).map(move |_| {
        let mut order: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            let j = (draws.next_u64() % (i as u64 + 1)) as usize;
            order.swap(i, j);
        }
        let mut mask = vec![false; n];
        for &i in &order[..n / 2] {
            mask[i] = true;
        }
        mask
    })
}

/// The value at quantile `q` (0 to 1) of `values`, by the nearest rank; NaN when there are none.
pub fn percentile(values: &mut [f64], q: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    values[((values.len() - 1) as f64 * q.clamp(0.0, 1.0)).round() as usize]
}

/// The 5th and 95th percentiles of `values`.
pub fn middle_90(values: &mut [f64]) -> [f64; 2] {
    [percentile(values, 0.05), percentile(values, 0.95)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resamples_draw_with_replacement_from_a_fixed_seed() {
        let draws: Vec<Vec<usize>> = resamples(10, 50).collect();
        assert_eq!(draws.len(), 50);
        assert!(draws
            .iter()
            .all(|d| d.len() == 10 && d.iter().all(|&i| i < 10)));
        // with replacement: some resample repeats an index
        assert!(draws.iter().any(|d| {
            let mut s = d.clone();
            s.sort_unstable();
            s.windows(2).any(|w| w[0] == w[1])
        }));
        // and every index is drawn somewhere
        assert!((0..10).all(|i| draws.iter().any(|d| d.contains(&i))));
        assert_eq!(draws, resamples(10, 50).collect::<Vec<_>>());
        assert_eq!(resamples(0, 50).count(), 0);
    }

    #[test]
    fn halves_hold_half_the_indices_each_time_from_a_fixed_seed() {
        let drawn: Vec<Vec<bool>> = halves(9, 200).collect();
        assert!(drawn
            .iter()
            .all(|h| h.len() == 9 && h.iter().filter(|&&x| x).count() == 4));
        // every index is in some half and out of another; not every half the same
        assert!((0..9).all(|i| drawn.iter().any(|h| h[i]) && drawn.iter().any(|h| !h[i])));
        assert!(drawn.iter().any(|h| h != &drawn[0]));
        assert_eq!(drawn, halves(9, 200).collect::<Vec<_>>());
        assert_eq!(
            halves(0, 3).collect::<Vec<_>>(),
            vec![Vec::<bool>::new(); 3]
        );
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        let mut v: Vec<f64> = (0..=100).rev().map(f64::from).collect();
        assert_eq!(middle_90(&mut v), [5.0, 95.0]);
        assert_eq!(percentile(&mut [3.0], 0.05), 3.0);
        assert!(percentile(&mut [], 0.5).is_nan());
    }
}
