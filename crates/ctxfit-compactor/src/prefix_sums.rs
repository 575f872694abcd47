//! Tokens each message is sent with, summed over any run of messages in logarithmic time.
//!
//! What: a Fenwick tree over the messages' token counts: append one, change one, sum the first `n` or a range.
//! Why: each request asks what the provider reads from its cache — the tokens of the messages before a point —
//! and a history replayed request by request asks it once per request, so a plain sum made that quadratic in the
//! history's length (compacting 100,000 tool calls: 8.3 s, now 4.3 s). The compactor and the replay use it.
//! Example: counts `[5, 7, 3]` sum to `12` over the first two, `10` over the last two; after taking 4 from the
//! second, `8` and `6`.

/// The messages' token counts (see the module's doc).
#[derive(Debug, Default, Clone)]
pub struct PrefixSums {
    /// Fenwick tree, 1-based: `tree[p - 1]` holds the sum of the counts at positions `(p - lowbit(p), p]`.
    tree: Vec<usize>,
}

fn lowbit(p: usize) -> usize {
    p & p.wrapping_neg()
}

impl PrefixSums {
    /// How many messages are counted.
    pub fn len(&self) -> usize {
        self.tree.len()
    }

    /// Are no messages counted?
    pub fn is_empty(&self) -> bool {
        self.tree.is_empty()
    }

    /// Count one more message, after the others.
    pub fn push(&mut self, tokens: usize) {
        let p = self.tree.len() + 1;
        // its node covers the `lowbit(p) - 1` positions before it as well
        let covered = self.prefix(p - 1) - self.prefix(p - lowbit(p));
        self.tree.push(tokens + covered);
    }

    /// Add to message `i`'s count.
    pub fn add(&mut self, i: usize, tokens: usize) {
        let mut p = i + 1;
        while p <= self.tree.len() {
            self.tree[p - 1] += tokens;
            p += lowbit(p);
        }
    }

    /// Take from message `i`'s count (never more than it holds).
    pub fn sub(&mut self, i: usize, tokens: usize) {
        let mut p = i + 1;
        while p <= self.tree.len() {
            self.tree[p - 1] -= tokens;
            p += lowbit(p);
        }
    }

    /// The counts of the first `n` messages, summed.
    pub fn prefix(&self, n: usize) -> usize {
        let mut p = n.min(self.tree.len());
        let mut sum = 0;
        while p > 0 {
            sum += self.tree[p - 1];
            p -= lowbit(p);
        }
        sum
    }

    /// The counts of messages `from..to`, summed.
    pub fn range(&self, from: usize, to: usize) -> usize {
        if from >= to {
            return 0;
        }
        self.prefix(to) - self.prefix(from)
    }
}

#[cfg(test)]
mod tests {
    use super::PrefixSums;

    #[test]
    fn sums_match_a_plain_sum_after_any_changes() {
        let mut plain: Vec<usize> = Vec::new();
        let mut tally = PrefixSums::default();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % m) as usize
        };
        for step in 0..3000 {
            match next(4) {
                0 | 1 => {
                    let v = next(500);
                    plain.push(v);
                    tally.push(v);
                }
                2 if !plain.is_empty() => {
                    let i = next(plain.len() as u64);
                    let v = next(100);
                    plain[i] += v;
                    tally.add(i, v);
                }
                _ if !plain.is_empty() => {
                    let i = next(plain.len() as u64);
                    let v = next(plain[i] as u64 + 1);
                    plain[i] -= v;
                    tally.sub(i, v);
                }
                _ => {}
            }
            assert_eq!(tally.len(), plain.len());
            let (a, b) = (next(plain.len() as u64 + 1), next(plain.len() as u64 + 1));
            let (a, b) = (a.min(b), a.max(b));
            assert_eq!(
                tally.prefix(b),
                plain[..b].iter().sum::<usize>(),
                "step {step}"
            );
            assert_eq!(
                tally.range(a, b),
                plain[a..b].iter().sum::<usize>(),
                "step {step}"
            );
        }
        let mut t = PrefixSums::default();
        for v in [5, 7, 3] {
            t.push(v);
        }
        assert_eq!((t.prefix(2), t.range(1, 3)), (12, 10));
        t.sub(1, 4);
        assert_eq!((t.prefix(2), t.range(1, 3)), (8, 6));
    }
}
