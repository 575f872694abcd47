//! A browser agent's session — a screenshot a step — replayed request by request: `smart` keeps the newest three
//! screenshots and writes the older ones as a line each (rule `images`), for far fewer tokens, at a cost below
//! sending everything under both price models. (The corpus holds no tool result with an image, so this is the
//! session `docs/benchmarks.md` reports for them.)

use ctxfit_model::Block;
use ctxfit_replay::{replay, Policy, PriceModel, SessionReplay};
use ctxfit_tokens::{FastEstimator, TokenEstimator};
use serde_json::json;

fn fast() -> Box<dyn TokenEstimator> {
    Box::new(FastEstimator)
}

/// `steps` screenshots of a checkout flow (Playwright's MCP tool), each with its caption, then the answer.
fn session(steps: usize) -> ctxfit_model::Conversation {
    let png = "iVBORw0KGgo".repeat(4_000);
    let mut messages =
        vec![json!({"role": "user", "content": "Test the checkout flow in the browser."})];
    for i in 0..steps {
        let id = format!("toolu_{i:02}");
        messages.push(json!({"role": "assistant", "content": [
            {"type": "text", "text": format!("Step {i}: I click the next button.")},
            {"type": "tool_use", "id": id, "name": "mcp__playwright__browser_take_screenshot", "input": {}}]}));
        messages.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": [
            {"type": "text", "text": format!("Took the screenshot of step {i}.")},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}]}]}));
    }
    messages.push(json!({"role": "assistant", "content": "The checkout works."}));
    ctxfit_model::from_value(json!({"model": "m", "max_tokens": 8, "messages": messages})).unwrap()
}

fn run(policy: &str, prices: PriceModel) -> SessionReplay {
    run_under(&Policy::named(policy).unwrap(), prices)
}

fn run_under(policy: &Policy, prices: PriceModel) -> SessionReplay {
    let registry = ctxfit_plugins::registry().unwrap();
    replay(
        "shots",
        &session(40),
        policy,
        &registry,
        &fast,
        prices.prices(),
    )
    .unwrap()
}

#[test]
fn a_request_budget_holds_on_screenshots() {
    // every result is a caption and an image: cut further by the budget, each is fewer tokens, if more
    // characters — with `smart`'s rules, and with a profile whose rules never cut an image
    let text = "[profiles.b]\nextends = \"smart\"\nrequest_budget = 20000\n\n\
                [profiles.text-only]\nextends = \"smart\"\nrequest_budget = 20000\n\
                [[profiles.text-only.rules]]\nrule = \"excerpt\"\ntools = [\"*\"]\n";
    let file = ctxfit_compactor::PolicyFile::parse(text, "test").unwrap();
    for profile in ["b", "text-only"] {
        let settings = file.resolve(Some(profile), None, &|_| None).unwrap();
        let r = run_under(&Policy::Profile(Box::new(settings)), PriceModel::Anthropic);
        // (the newest screenshot alone is 1,600 tokens: the rest always fits)
        assert!(r.peak_tokens() <= 20_000, "{profile}: {}", r.peak_tokens());
        assert_eq!(r.over_request_budget(), 0, "{profile}");
        assert!(
            r.cost() < run("none", PriceModel::Anthropic).cost(),
            "{profile}"
        );
    }
}

#[test]
fn a_screenshot_a_step_costs_less_with_the_newest_three_kept() {
    for prices in [PriceModel::Anthropic, PriceModel::OpenAi] {
        let (none, smart) = (run("none", prices), run("smart", prices));
        let saved = 1.0 - smart.input_tokens() as f64 / none.input_tokens() as f64;
        let cheaper = 1.0 - smart.cost() / none.cost();
        // measured 2026-12-05: −64.4% tokens; cost −6.1% (Anthropic), −14.9% (OpenAI)
        assert!(saved > 0.6, "{}: tokens saved {saved:.3}", prices.name());
        assert!(cheaper > 0.05, "{}: cost saved {cheaper:.3}", prices.name());
        // no request grows past what it would be with everything sent
        for (a, b) in smart.turns.iter().zip(&none.turns) {
            assert!(a.input_tokens <= b.input_tokens);
        }
    }
}

#[test]
fn the_last_request_keeps_the_newest_three_screenshots_and_the_rest_say_what_they_were() {
    let conv = session(40);
    let registry = ctxfit_plugins::registry().unwrap();
    let mut compactor = ctxfit_compactor::Compactor::new(
        Policy::named("smart")
            .map(|p| match p {
                Policy::Profile(s) => (*s).clone(),
                _ => unreachable!("smart is a profile"),
            })
            .unwrap(),
        &registry,
        fast(),
    )
    .unwrap();
    // the agent's loop: a request before each answer
    for end in (2..=conv.messages.len()).step_by(2) {
        let request = ctxfit_model::Conversation {
            messages: conv.messages[..end].to_vec(),
            ..conv.clone()
        };
        compactor.compact(&request, None);
    }
    let sent = compactor.project(&conv);
    let results: Vec<&ctxfit_model::Content> = sent
        .messages
        .iter()
        .flat_map(|m| m.tool_results())
        .map(|r| &r.content)
        .collect();
    let images = |c: &ctxfit_model::Content| {
        c.blocks
            .iter()
            .filter(|b| matches!(b, Block::Image(_)))
            .count()
    };
    // the cuts wait until their cache writes pay (a screenshot read from the cache costs a tenth of one
    // written), then come in batches: by the last request, every screenshot but the newest three is a line
    let kept: Vec<usize> = results.iter().map(|c| images(c)).collect();
    assert_eq!(kept[..37], [0; 37]);
    assert_eq!(kept[37..], [1, 1, 1]);
    for (i, c) in results[..37].iter().enumerate() {
        // the caption as it was, the image as a line
        assert_eq!(c.blocks.len(), 2);
        assert_eq!(
            c.blocks[0].as_text(),
            Some(format!("Took the screenshot of step {i}.").as_str())
        );
    }
    let line = "[image/png image left out of this stale result to save context: call \
                mcp__playwright__browser_take_screenshot again to see it]";
    assert_eq!(results[0].blocks[1].as_text(), Some(line));
}
