//! The regret bound's accounting (`max_regret`): what a conversation has cost so far against sending everything.
//!
//! **Why.** The payback rule makes a cut when it is *expected* to pay back its cache write over the requests
//! forecast to come; a conversation that ends sooner than forecast has paid the write and not got it back. A
//! forecast cannot bound that; spending only what has been earned can (ski rental). Each request, the ledger
//! knows, per price model, what sending everything would have cost so far (`none`) and how much less the
//! conversation has cost (`saved`, negative when it cost more). A run of cuts whose extra cost now — writing the
//! cached tail after them again instead of reading it — is more than `saved + this request's own saving +
//! max_regret × none` waits. So after every request `saved ≥ −max_regret × none`: no conversation costs more
//! than that share above sending everything, whatever comes after.
//!
//! **The accounting is the replay's.** A request reads from the cache what the previous one sent, up to the first
//! message that changed, and writes the rest; sending everything reads all of the previous request; after a pause
//! longer than the cache lives, or at the first request, both write everything. Costs are in cache reads; a cache
//! write costs 12.5 of them at Anthropic's prices (1.25 / 0.1) — 20 where the cache lives an hour (2.0 / 0.1) —
//! and 10 at OpenAI's (1.0 / 0.1). The bound holds under both: a cut must be affordable under each.

/// What a cache write costs in cache reads, per price model the bound covers: Anthropic (1.25 / 0.1), OpenAI
/// (1.0 / 0.1) — for the five-minute cache; [`write_in_reads`] for any.
pub const WRITE_IN_READS: [f64; 2] = [12.5, 10.0];

/// A cache that lives this many seconds or more is Anthropic's one-hour cache, whose writes cost 2.0 a token.
pub const ONE_HOUR_CACHE: u64 = 3600;

/// [`WRITE_IN_READS`] for a cache that lives `ttl` seconds: a write to Anthropic's one-hour cache costs 2.0 a
/// token (20 reads), not 1.25.
pub fn write_in_reads(ttl: u64) -> [f64; 2] {
    if ttl >= ONE_HOUR_CACHE {
        [20.0, WRITE_IN_READS[1]]
    } else {
        WRITE_IN_READS
    }
}

/// One request's tokens: read from the cache, and all of them (the rest is written).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestTokens {
    pub read: usize,
    pub total: usize,
}

impl RequestTokens {
    fn cost(self, write: f64) -> f64 {
        self.read as f64 + write * self.total.saturating_sub(self.read) as f64
    }
}

/// What a conversation has cost so far against sending everything, per price model of [`WRITE_IN_READS`].
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Ledger {
    /// What sending everything would have cost so far, in cache reads.
    pub none: [f64; 2],
    /// How much less than that the conversation cost (negative: more).
    pub saved: [f64; 2],
    /// Tokens of the previous request with nothing compacted: what sending everything has cached.
    pub previous_uncompacted: usize,
}

impl Ledger {
    /// What this request may spend on cuts beyond what it costs without them, per price model: the savings so far,
    /// this request's own saving without new cuts (`none` against `uncut`), and `share` of what sending
    /// everything costs up to this request.
    pub fn allowance(
        &self,
        write: [f64; 2],
        share: f64,
        none: RequestTokens,
        uncut: RequestTokens,
    ) -> [f64; 2] {
        std::array::from_fn(|m| {
            let w = write[m];
            self.saved[m] + (none.cost(w) - uncut.cost(w)) + share * (self.none[m] + none.cost(w))
        })
    }

    /// What cutting `reclaim` tokens costs now beyond not cutting, per price model, when `tail` tokens of the
    /// request from the first cut on were cached: the tail left is written instead of read (negative: it saves).
    pub fn extra(write: [f64; 2], reclaim: usize, tail: usize) -> [f64; 2] {
        std::array::from_fn(|m| write[m] * (tail as f64 - reclaim as f64) - tail as f64)
    }

    /// Enter a request as it was sent, beside what sending everything would have sent.
    pub fn settle(&mut self, write: [f64; 2], none: RequestTokens, sent: RequestTokens) {
        for (m, &w) in write.iter().enumerate() {
            self.none[m] += none.cost(w);
            self.saved[m] += none.cost(w) - sent.cost(w);
        }
        self.previous_uncompacted = none.total;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: [f64; 2] = WRITE_IN_READS;

    fn tokens(read: usize, total: usize) -> RequestTokens {
        RequestTokens { read, total }
    }

    #[test]
    fn a_cut_is_affordable_only_from_what_was_saved_plus_the_share() {
        let mut ledger = Ledger::default();
        // the first request: everything written, either way
        ledger.settle(W, tokens(0, 1000), tokens(0, 1000));
        assert_eq!(ledger.saved, [0.0, 0.0]);
        assert_eq!(ledger.none, [12_500.0, 10_000.0]);
        // the second: 1,000 read and 200 written either way; 3% of what everything costs by then
        let none = tokens(1000, 1200);
        let allowance = ledger.allowance(W, 0.03, none, none);
        assert_eq!(
            allowance,
            [0.03 * (12_500.0 + 3_500.0), 0.03 * (10_000.0 + 3_000.0)]
        );
        // cutting 100 tokens behind a cached tail of 900: 800 written instead of 900 read
        let extra = Ledger::extra(W, 100, 900);
        assert_eq!(extra, [12.5 * 800.0 - 900.0, 10.0 * 800.0 - 900.0]);
        assert!(extra[0] > allowance[0] && extra[1] > allowance[1]);
        // with the cache expired there is no tail: a cut saves its writes
        assert_eq!(Ledger::extra(W, 100, 0), [-1250.0, -1000.0]);
    }

    #[test]
    fn the_savings_follow_the_requests_as_sent() {
        let mut ledger = Ledger::default();
        ledger.settle(W, tokens(0, 1000), tokens(0, 1000));
        // a cut of 300 behind a tail of 600: 300 written again
        ledger.settle(W, tokens(1000, 1100), tokens(400, 800));
        let none = 1000.0 + 12.5 * 100.0;
        let sent = 400.0 + 12.5 * 400.0;
        assert_eq!(ledger.saved[0], none - sent);
        // the next request reads all 800 where sending everything reads 1,100: it earns back
        ledger.settle(W, tokens(1100, 1200), tokens(800, 900));
        assert_eq!(ledger.saved[0], none - sent + 300.0);
        assert_eq!(ledger.previous_uncompacted, 1200);
    }

    #[test]
    fn a_write_to_the_one_hour_cache_costs_20_reads_at_anthropics_prices() {
        assert_eq!(write_in_reads(300), [12.5, 10.0]);
        assert_eq!(write_in_reads(3600), [20.0, 10.0]);
        // the same cut costs more where the cache lives an hour
        let (five, hour) = (
            Ledger::extra(write_in_reads(300), 100, 900),
            Ledger::extra(write_in_reads(3600), 100, 900),
        );
        assert_eq!(hour, [20.0 * 800.0 - 900.0, five[1]]);
    }
}
