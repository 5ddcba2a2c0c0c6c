//! The thread that drives a PD [`Member`]: one thread (`pd-raft`) takes messages, proposals
//! and requests from a channel, ticks every `tick-interval`, and runs the member's rounds,
//! handing what to send to a [`Transport`]. Everything else talks to it through a
//! [`DriverHandle`]. PD's traffic is small (TSO windows every few seconds, store and region
//! changes), so one thread writing the log itself is enough.

use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use raft::eraftpb::Message;

use crate::disk::Disk;
use crate::member::{Member, ProposeError, Reply, Shared};
use crate::state::{Command, MemberRecord, Outcome};

/// Where the member's messages go (best effort: Raft resends what is lost).
pub trait Transport: Send {
    fn send(&mut self, msgs: Vec<Message>);
}

/// What to do when the member's disk failed.
pub type OnFailure = Box<dyn FnOnce(crate::member::MemberError) + Send>;

enum Input {
    Raft(Message),
    Propose(Command, Reply),
    Add(MemberRecord, Reply),
    Remove(u64, Reply),
    Transfer(u64),
    Gone(u64),
    Stop,
}

/// How the rest of the process reaches the member. Cheap to clone.
#[derive(Clone)]
pub struct DriverHandle {
    tx: mpsc::Sender<Input>,
    shared: Arc<Shared>,
}

impl DriverHandle {
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    pub fn step(&self, msg: Message) {
        let _ = self.tx.send(Input::Raft(msg));
    }

    /// Proposes `cmd`; `reply` is called once (from the driver's thread).
    pub fn propose_with(&self, cmd: Command, reply: Reply) {
        if let Err(mpsc::SendError(Input::Propose(_, reply))) =
            self.tx.send(Input::Propose(cmd, reply))
        {
            reply(Err(ProposeError::Unknown));
        }
    }

    /// Proposes `cmd` and waits for its outcome (blocking: not on an async thread).
    pub fn propose(&self, cmd: Command) -> Result<Outcome, ProposeError> {
        let (tx, rx) = mpsc::channel();
        self.propose_with(
            cmd,
            Box::new(move |r| {
                let _ = tx.send(r);
            }),
        );
        rx.recv().unwrap_or(Err(ProposeError::Unknown))
    }

    /// As [`DriverHandle::propose`], for async callers.
    pub async fn propose_async(&self, cmd: Command) -> Result<Outcome, ProposeError> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.propose_with(
            cmd,
            Box::new(move |r| {
                let _ = tx.send(r);
            }),
        );
        rx.await.unwrap_or(Err(ProposeError::Unknown))
    }

    /// Removes member `id` from the group; waits for the change to apply.
    pub async fn remove_member(&self, id: u64) -> Result<Outcome, ProposeError> {
        self.change_members(|reply| Input::Remove(id, reply)).await
    }

    /// Adds a member; waits for the change to apply and answers its id.
    pub async fn add_member(&self, record: MemberRecord) -> Result<Outcome, ProposeError> {
        self.change_members(|reply| Input::Add(record, reply)).await
    }

    async fn change_members(
        &self,
        input: impl FnOnce(Reply) -> Input,
    ) -> Result<Outcome, ProposeError> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let reply: Reply = Box::new(move |r| {
            let _ = tx.send(r);
        });
        if let Err(mpsc::SendError(Input::Add(_, reply) | Input::Remove(_, reply))) =
            self.tx.send(input(reply))
        {
            reply(Err(ProposeError::Unknown));
        }
        rx.await.unwrap_or(Err(ProposeError::Unknown))
    }

    pub fn transfer_leader(&self, to: u64) {
        let _ = self.tx.send(Input::Transfer(to));
    }

    /// Member `id`'s peer port refused a connection.
    pub fn member_gone(&self, id: u64) {
        let _ = self.tx.send(Input::Gone(id));
    }
}

/// The running thread; stops when dropped (after the round it is in).
pub struct Driver {
    handle: Option<DriverHandle>,
    thread: Option<JoinHandle<()>>,
}

impl Driver {
    /// Runs `member`; should its disk fail, the member stops claiming the lead and
    /// `on_failure` hears why (the server ends the process).
    pub fn start(
        member: Member,
        disk: Box<dyn Disk>,
        make_transport: impl FnOnce(DriverHandle) -> Box<dyn Transport>,
        tick: Duration,
        on_failure: OnFailure,
    ) -> Driver {
        let (tx, rx) = mpsc::channel();
        let handle = DriverHandle {
            tx,
            shared: member.shared().clone(),
        };
        let transport = make_transport(handle.clone());
        let thread = std::thread::Builder::new()
            .name("pd-raft".into())
            .spawn(move || run(member, disk, transport, rx, tick, on_failure))
            .expect("the OS starts the pd-raft thread");
        Driver {
            handle: Some(handle),
            thread: Some(thread),
        }
    }

    pub fn handle(&self) -> DriverHandle {
        self.handle.clone().expect("running")
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        if let Some(h) = self.handle.take() {
            let _ = h.tx.send(Input::Stop);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn run(
    mut member: Member,
    mut disk: Box<dyn Disk>,
    mut transport: Box<dyn Transport>,
    rx: mpsc::Receiver<Input>,
    tick: Duration,
    on_failure: OnFailure,
) {
    let mut next_tick = Instant::now() + tick;
    loop {
        let wait = next_tick.saturating_duration_since(Instant::now());
        match rx.recv_timeout(wait) {
            Ok(Input::Stop) => break,
            Ok(input) => {
                let now = Instant::now();
                handle(&mut member, input, now);
                while let Ok(more) = rx.try_recv() {
                    if let Input::Stop = more {
                        member.fail_proposals();
                        return;
                    }
                    handle(&mut member, more, now);
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        let now = Instant::now();
        if now >= next_tick {
            member.tick(now);
            // Never two ticks in a row, however late this one was: followers count their
            // protection of the leader's lease in ticks (see `MemberConfig::new`).
            next_tick = (next_tick + tick).max(now + tick);
        }
        let mut send = Vec::new();
        loop {
            if let Err(e) = member.handle_ready(disk.as_mut(), &mut send, now) {
                tracing::error!("the pd member stops: {e}");
                member.stop();
                return on_failure(e);
            }
            if !member.has_ready() {
                break;
            }
        }
        if !send.is_empty() {
            transport.send(send);
        }
    }
    member.fail_proposals();
}

fn handle(member: &mut Member, input: Input, now: Instant) {
    let result = match input {
        Input::Raft(msg) => member.step(msg),
        Input::Propose(cmd, reply) => {
            member.propose(cmd, reply, now);
            Ok(())
        }
        Input::Add(record, reply) => {
            member.propose_addition(record, reply, now);
            Ok(())
        }
        Input::Remove(id, reply) => {
            member.propose_removal(id, reply, now);
            Ok(())
        }
        Input::Transfer(to) => {
            member.transfer_leader(to, now);
            Ok(())
        }
        Input::Gone(id) => member.on_member_gone(id),
        Input::Stop => Ok(()),
    };
    if let Err(e) = result {
        tracing::debug!("pd member input refused: {e}");
    }
}
