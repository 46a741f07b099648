//! The peer actors of the executor bench, each holding the same
//! `PingPong` machine: a `ractor` actor and a `kameo` actor, with the
//! messages each takes (one-way event, round trip, flush, and a read-back
//! for the checks).

use std::hint::black_box;

use agent_fsm::{Named, StateMachine};
use kameo::actor::Spawn as _;
use kameo::message::{Context, Message};
use ractor::{ActorProcessingErr, RpcReplyPort};

use super::ping_pong::{PingPong, Snapshot, Tick};

/// The ractor actor; its state is the machine.
pub(crate) struct RactorPingPong;

/// A message to the ractor actor.
pub(crate) enum RactorMsg {
    /// One-way event (`cast`).
    Event(Tick),
    /// Event whose action name is sent back (`call`).
    Call(Tick, RpcReplyPort<&'static str>),
    /// Answered once every earlier message is handled.
    Flush(RpcReplyPort<()>),
    /// Reads the machine back, for the checks only.
    Inspect(RpcReplyPort<Snapshot>),
}

impl ractor::Actor for RactorPingPong {
    type Msg = RactorMsg;
    type State = PingPong;
    type Arguments = ();

    async fn pre_start(&self, _: ractor::ActorRef<RactorMsg>, (): ()) -> Result<PingPong, ActorProcessingErr> {
        Ok(PingPong::default())
    }

    async fn handle(
        &self,
        _: ractor::ActorRef<RactorMsg>,
        message: RactorMsg,
        machine: &mut PingPong,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            RactorMsg::Event(event) => {
                black_box(machine.handle_event(event));
            }
            RactorMsg::Call(event, reply) => {
                let _ = reply.send(machine.handle_event(event).name());
            }
            RactorMsg::Flush(reply) => {
                let _ = reply.send(());
            }
            RactorMsg::Inspect(reply) => {
                let _ = reply.send(machine.snapshot());
            }
        }
        Ok(())
    }
}

/// A reference to a ractor actor that stops it when dropped: ractor actors
/// outlive their references, and each bench would otherwise leave its
/// agents behind.
pub(crate) struct RactorAgent(pub(crate) ractor::ActorRef<RactorMsg>);

impl Drop for RactorAgent {
    fn drop(&mut self) {
        self.0.stop(None);
    }
}

impl RactorAgent {
    /// Starts an actor, waiting for its `pre_start` as ractor does.
    pub(crate) async fn spawn() -> Self {
        let (actor, _) = ractor::Actor::spawn(None, RactorPingPong, ()).await.unwrap();
        Self(actor)
    }

    /// A `call` without timeout (a timeout would add a timer per call).
    pub(crate) async fn call<R: Send + 'static>(&self, msg_for: impl FnOnce(RpcReplyPort<R>) -> RactorMsg) -> R {
        self.0.call(msg_for, None).await.unwrap().unwrap()
    }
}

/// The kameo actor, holding the machine.
pub(crate) struct KameoPingPong(PingPong);

impl kameo::Actor for KameoPingPong {
    type Args = Self;
    type Error = kameo::error::Infallible;

    async fn on_start(args: Self, _: kameo::actor::ActorRef<Self>) -> Result<Self, Self::Error> {
        Ok(args)
    }
}

/// One-way event (`tell`).
pub(crate) struct KameoEvent(pub(crate) Tick);
/// Event whose action name is sent back (`ask`).
pub(crate) struct KameoCall(pub(crate) Tick);
/// Answered once every earlier message is handled.
pub(crate) struct KameoFlush;
/// Reads the machine back, for the checks only.
pub(crate) struct KameoInspect;

impl Message<KameoEvent> for KameoPingPong {
    type Reply = ();

    async fn handle(&mut self, KameoEvent(event): KameoEvent, _: &mut Context<Self, ()>) {
        black_box(self.0.handle_event(event));
    }
}

impl Message<KameoCall> for KameoPingPong {
    type Reply = &'static str;

    async fn handle(&mut self, KameoCall(event): KameoCall, _: &mut Context<Self, &'static str>) -> &'static str {
        self.0.handle_event(event).name()
    }
}

impl Message<KameoFlush> for KameoPingPong {
    type Reply = ();

    async fn handle(&mut self, _: KameoFlush, _: &mut Context<Self, ()>) {}
}

impl Message<KameoInspect> for KameoPingPong {
    type Reply = Snapshot;

    async fn handle(&mut self, _: KameoInspect, _: &mut Context<Self, Snapshot>) -> Snapshot {
        self.0.snapshot()
    }
}

/// Starts a kameo actor on a bounded mailbox of the same capacity as the
/// other inboxes (kameo's default is 64).
pub(crate) fn kameo_spawn() -> kameo::actor::ActorRef<KameoPingPong> {
    KameoPingPong::spawn_with_mailbox(KameoPingPong(PingPong::default()), kameo::mailbox::bounded(32))
}
