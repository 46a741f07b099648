//! The bench's machine in tokio-fsm's terms: the macro generates the state
//! and event enums, the handle and the task; the context is the total.

use tokio_fsm::fsm;

#[fsm(initial = Ping, channel_size = 32)]
impl PingPongFsm {
    type Context = u64;
    type Error = std::convert::Infallible;

    /// `Ping` → `Pong`, counting the tick.
    #[on(state = Ping, event = Tick, next = Pong)]
    async fn ping(&mut self, tick: u64) {
        self.context = self.context.wrapping_add(tick);
    }

    /// `Pong` → `Ping`, counting the tick.
    #[on(state = Pong, event = Tick, next = Ping)]
    async fn pong(&mut self, tick: u64) {
        self.context = self.context.wrapping_add(tick);
    }
}

impl PingPongFsmState {
    /// The name the checks compare with the other variants'.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Ping => "Ping",
            Self::Pong => "Pong",
        }
    }
}
