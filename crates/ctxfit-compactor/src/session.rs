//! An agent's conversation and its compactor together: append what the model and the tools said, get the next
//! request to send.

use ctxfit_model::{to_value, Block, Content, Conversation, Message, Value};

use crate::compactor::{Compactor, RestoreError, SavedState};
use crate::report::Report;

/// The request to send to the model, compacted, and what the compaction did.
#[derive(Debug, Clone)]
pub struct Request {
    /// The request body in the conversation's wire format (`messages` or `input`, `system`, `tools`, and the
    /// other fields the conversation was made with, such as `model` and `max_tokens`).
    pub body: Value,
    pub report: Report,
}

/// One agent's conversation, compacted before every model call: the live loop the replay measures.
///
/// Start it from the request the agent would send first (a [`Conversation`] with its system prompt, tools and
/// the user's message), then per turn: [`AgentSession::next_request`] → send `body` → append the model's answer
/// ([`AgentSession::push_response`]), report the usage ([`AgentSession::report_usage`]), run the tools and
/// append their results ([`AgentSession::push_tool_results`]); a request the provider refuses as too long for its
/// model goes to [`AgentSession::refused`], and the next request is the same one within the window it said. The
/// conversation keeps everything as it was said; only the requests are compacted, and each decision is repeated
/// byte for byte in every later request.
///
/// ```
/// use ctxfit_compactor::{AgentSession, Compactor, PolicyFile};
/// use ctxfit_model::{Block, Conversation, Message, WireFormat};
/// use serde_json::json;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let settings = PolicyFile::default().resolve(Some("seed-002"), None, &|_| None)?;
/// // the built-in rules, linked by ctxfit-plugins
/// let registry = ctxfit_plugins::registry()?;
/// let compactor = Compactor::new(settings, &registry, Box::new(ctxfit_tokens::FastEstimator))?;
///
/// let mut first = Conversation::new(WireFormat::Anthropic);
/// first.extra.insert("model".into(), json!("claude-sonnet-4-5"));
/// first.messages.push(Message::user("Why does the build fail?"));
/// let mut session = AgentSession::new(first, compactor);
///
/// for turn in 0..3 {
///     let request = session.next_request();
///     // ... send request.body to the model; here, its answer is a call to read the build log
///     assert_eq!(request.body["model"], "claude-sonnet-4-5");
///     let id = format!("call_{turn}");
///     session.push_response(vec![
///         Block::text("Reading the log."),
///         Block::tool_use(&id, "bash", json!({"command": "make 2>&1"})),
///     ]);
///     session.report_usage(request.report.tokens_after);
///     let log = "cc -c parser.c\n".repeat(200) + "parser.c:12: error: expected ';'";
///     session.push_tool_results(vec![Block::tool_result(&id, log, false)]);
/// }
/// let last = session.next_request();
/// // the logs the model has answered are cut (seed-002 keeps 400 characters of a bash result)
/// assert!(last.report.compacted_total >= 2);
/// assert!(last.body.to_string().len() < session.conversation().messages.len() * 1_000);
/// # Ok(())
/// # }
/// ```
pub struct AgentSession {
    conversation: Conversation,
    compactor: Compactor,
    reported_input_tokens: Option<usize>,
    /// Messages the previous request held: the ones after are new to the next.
    sent_messages: usize,
}

impl AgentSession {
    pub fn new(conversation: Conversation, compactor: Compactor) -> AgentSession {
        AgentSession {
            conversation,
            compactor,
            reported_input_tokens: None,
            sent_messages: 0,
        }
    }

    /// The request to send now: the conversation so far, compacted — at the current time, so that a pause longer
    /// than the provider's cache lives (the profile's `cache_ttl`) is seen, and the cuts waiting for their turn
    /// are made then.
    pub fn next_request(&mut self) -> Request {
        let next = crate::NextRequest {
            first_new: self.sent_messages,
            reported_input_tokens: self.reported_input_tokens.take(),
            ..crate::NextRequest::default()
        };
        self.sent_messages = self.conversation.messages.len();
        let report = self.compactor.next_request(&self.conversation, next);
        let body = to_value(&self.compactor.project(&self.conversation));
        Request { body, report }
    }

    /// The input tokens the provider reported for the request just sent (cache reads and writes included): the
    /// budget trigger of the next request uses them instead of an estimate.
    pub fn report_usage(&mut self, input_tokens: usize) {
        self.reported_input_tokens = Some(input_tokens);
    }

    /// The provider refused the request just sent as too long for its model (`answer`: its error answer's body,
    /// as sent): the session learns the model's window from it ([`Compactor::learn_window`]), and
    /// [`AgentSession::next_request`] then gives the same request compacted within it, to send again. The request
    /// budget it comes to, or `None` when the answer is no such refusal or teaches nothing.
    pub fn refused(&mut self, answer: &[u8]) -> Option<usize> {
        let overflow = crate::window::overflow(self.conversation.format, answer)?;
        self.compactor.learn_window(&overflow)
    }

    /// Append the model's answer: its text and tool calls.
    pub fn push_response(&mut self, blocks: Vec<Block>) {
        self.conversation.push_response(blocks);
    }

    /// Append the results of the tools the model called.
    pub fn push_tool_results(&mut self, results: Vec<Block>) {
        self.conversation.push_tool_results(results);
    }

    /// Append any message (a user's follow-up: `Message::user(...)`).
    pub fn push(&mut self, message: Message) {
        self.conversation.messages.push(message);
    }

    /// The original of the result a retrieval handle names (`toolu_01`, or `toolu_01#1` for a reused id): what
    /// the agent answers a call of the profile's `retrieval_tool` with ([`crate::retrieve`]).
    pub fn retrieve(&self, handle: &str) -> Option<Content> {
        crate::retrieve(&self.conversation, handle)
    }

    /// The whole conversation as it was said, uncompacted.
    pub fn conversation(&self) -> &Conversation {
        &self.conversation
    }

    pub fn compactor(&self) -> &Compactor {
        &self.compactor
    }

    /// The compactor's decisions, to save across a restart ([`SavedState`]).
    pub fn save(&self) -> SavedState {
        self.compactor.save()
    }

    /// Resume a saved session: the conversation so far and the decisions saved with it.
    pub fn restore(
        conversation: Conversation,
        mut compactor: Compactor,
        saved: SavedState,
    ) -> Result<AgentSession, RestoreError> {
        compactor.restore(saved)?;
        Ok(AgentSession::new(conversation, compactor))
    }
}
