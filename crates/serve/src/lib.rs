//! `agentc serve --stdio`: the library's session operations over JSON-RPC 2.0 on stdin and
//! stdout (docs/serve.md), for harnesses in other languages (the Python package
//! `agentc_sandbox`): [`serve_stdio`], and the protocol's schema, [`schema_text`].
//!
//! One process, one runtime and one engine connection (`agentc_host::backend::on_client`) for
//! every request. Requests overlap: each is a future polled beside the others on this one thread
//! (`run_loop`), answering when it is done; their answers and the notifications of streamed
//! execs go through one writer. When stdin closes, on SIGINT or SIGTERM and on `shutdown`, the
//! requests in flight are stopped (an exec's processes too) and the sandboxes the server
//! created without `keep` are deleted with what their launches made (`Server::close`).
//!
//! [`protocol`] holds the messages; [`methods`] the dispatch and the short methods; [`exec`],
//! [`files`], [`resolve`] (`create`'s and `verify`'s launch), [`snapshots`] and [`runner`] the
//! others; [`common`] what they share.

#![deny(missing_docs)]

pub mod common;
pub mod exec;
pub mod files;
pub mod methods;
pub mod protocol;
pub mod resolve;
pub mod runner;
pub mod snapshots;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use agentc_egress::image::ProxyExecutable;
use agentc_engine::session::{Sandbox, SandboxClient, Sandboxes, SessionPort};
use futures_util::stream::{FuturesUnordered, StreamExt};
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, watch};

use agentc_host::backend::{Driver, OnClient, Signals};
use agentc_host::Failure;
use protocol::{RpcError, INVALID_REQUEST, PARSE_ERROR};

/// The longest request line read (a `write_file` of 192 MiB, as base64); a longer one is
/// refused and skipped.
const MAX_LINE: u64 = 256 * 1024 * 1024;

/// The protocol's schema (`agentc serve --schema`): every request's parameters and result,
/// as pretty JSON.
pub fn schema_text() -> Result<String, Failure> {
    serde_json::to_string_pretty(&protocol::schema())
        .map_err(|error| Failure::new(1, format!("cannot write the schema: {error}")))
}

/// Serves JSON-RPC on stdin and stdout (`agentc serve --stdio`) through `driver`'s engine and
/// backend until stdin closes, a signal or `shutdown`; 0 then. The sandboxes created without
/// `keep` are deleted with what their launches made.
pub fn serve_stdio(driver: &Driver) -> Result<u8, Failure> {
    let step = Serve {
        proxy: driver.proxy.clone(),
    };
    agentc_host::backend::on_client(driver, step)
}

/// The serve loop as a step over the backend's client.
struct Serve {
    /// The agentc executable the egress proxy's image and verify's probe are made of.
    proxy: ProxyExecutable,
}

impl OnClient for Serve {
    type Output = u8;

    async fn run<P: SessionPort>(self, client: &Sandboxes<P>) -> Result<u8, Failure> {
        let signals = Signals::new()?;
        let (out, lines) = mpsc::unbounded_channel::<Vec<u8>>();
        let writer = tokio::spawn(write_lines(lines));
        let (stop, stopping) = watch::channel(false);
        let (spawn, spawned) = mpsc::unbounded_channel();
        let server = Server {
            client,
            proxy: self.proxy,
            sessions: RefCell::new(BTreeMap::new()),
            out,
            stopping,
            cancels: RefCell::new(BTreeMap::new()),
            runners: RefCell::new(BTreeMap::new()),
            spawn,
        };
        let asked = run_loop(&server, signals, &stop, spawned).await;
        let deleted = server.close().await;
        if let Some(id) = asked {
            server.answer(id, Ok(serde_json::json!({ "deleted": deleted })));
        }
        drop(server);
        let _ = writer.await;
        Ok(0)
    }
}

/// A sandbox this server drives.
#[derive(Debug, Clone)]
pub struct Session {
    /// Its handle.
    pub sandbox: Sandbox,
    /// Kept when the server ends.
    pub keep: bool,
    /// The environment of its execs.
    pub env: BTreeMap<String, String>,
    /// Its plain execs go through a runner ([`runner`]).
    pub runner: bool,
}

/// What the requests share: the client, the sessions, the writer and the stop signal.
pub struct Server<'c, P: SessionPort> {
    client: &'c Sandboxes<P>,
    /// The agentc executable verify's probe is made of.
    proxy: ProxyExecutable,
    /// The sandboxes created or attached, by name.
    sessions: RefCell<BTreeMap<String, Session>>,
    out: mpsc::UnboundedSender<Vec<u8>>,
    /// Turns true when the server stops: requests in flight end.
    stopping: watch::Receiver<bool>,
    /// The execs in flight that `cancel` may stop, by their request's id (as JSON text).
    cancels: RefCell<BTreeMap<String, watch::Sender<bool>>>,
    /// The sessions' runners, by sandbox name and user ([`runner`]).
    runners: RefCell<BTreeMap<RunnerKey, Vec<Rc<runner::Runner>>>>,
    /// Futures that run beside the requests for as long as they need (the runners' execs).
    spawn: mpsc::UnboundedSender<InFlight<'c>>,
}

type InFlight<'a> = Pin<Box<dyn Future<Output = ()> + 'a>>;

/// A runner's sandbox name and user.
type RunnerKey = (String, Option<String>);

/// Reads requests until stdin closes, a signal, or `shutdown` (whose id it returns), running
/// each beside the others; then stops those in flight and waits for them to end.
async fn run_loop<'c, P: SessionPort>(
    server: &Server<'c, P>,
    mut signals: Signals,
    stop: &watch::Sender<bool>,
    mut spawned: mpsc::UnboundedReceiver<InFlight<'c>>,
) -> Option<Value> {
    let mut input = read_stdin();
    let mut in_flight: FuturesUnordered<InFlight<'_>> = FuturesUnordered::new();
    let mut shutdown = None;
    loop {
        tokio::select! {
            line = input.recv() => match line.unwrap_or(Line::End) {
                Line::End => break,
                Line::TooLong => server.answer(
                    Value::Null,
                    Err(RpcError::plain(INVALID_REQUEST, format!("a request line is longer than {MAX_LINE} bytes"))),
                ),
                Line::Text(text) => match parse(&text) {
                    Ok(None) => {}
                    Ok(Some(request)) if request.method == "shutdown" => {
                        shutdown = Some(request.id.unwrap_or(Value::Null));
                        break;
                    }
                    Ok(Some(request)) => {
                        if let (Some(id), "exec") = (&request.id, request.method.as_str()) {
                            // A `cancel` read next finds it, whenever it starts.
                            server.cancellable(id);
                        }
                        in_flight.push(Box::pin(server.handle(request)))
                    }
                    Err((id, error)) => server.answer(id, Err(error)),
                },
            },
            Some(()) = in_flight.next(), if !in_flight.is_empty() => {}
            Some(future) = spawned.recv() => in_flight.push(future),
            interrupt = signals.recv() => {
                log::debug!("serve: {interrupt:?}: stopping");
                break;
            }
        }
    }
    let _ = stop.send(true);
    // The runners' stdin closes: each ends once its command (stopped by its exec) has.
    server.runners.borrow_mut().clear();
    loop {
        tokio::select! {
            next = in_flight.next() => if next.is_none() { break },
            Some(future) = spawned.recv() => in_flight.push(future),
        }
    }
    shutdown
}

/// One request, as read.
pub struct Request {
    /// Its id; `None` for a notification (no answer).
    pub id: Option<Value>,
    /// The method.
    pub method: String,
    /// Its params (`{}` when absent).
    pub params: Value,
}

/// Reads a line as a JSON-RPC 2.0 request: `Ok(None)` for a notification of no method the
/// server knows (ignored), an error with the id to answer otherwise.
fn parse(text: &str) -> Result<Option<Request>, (Value, RpcError)> {
    let value: Value = serde_json::from_str(text).map_err(|error| {
        (
            Value::Null,
            RpcError::plain(PARSE_ERROR, format!("not JSON: {error}")),
        )
    })?;
    let Value::Object(mut object) = value else {
        return Err((
            Value::Null,
            RpcError::plain(INVALID_REQUEST, "a request is a JSON object"),
        ));
    };
    let id = object.remove("id");
    let answer_to = id.clone().unwrap_or(Value::Null);
    let invalid = |message: &str| (answer_to.clone(), RpcError::plain(INVALID_REQUEST, message));
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid("\"jsonrpc\" must be \"2.0\""));
    }
    if !matches!(
        id,
        None | Some(Value::Null | Value::Number(_) | Value::String(_))
    ) {
        return Err(invalid("\"id\" must be a number, a string or null"));
    }
    let Some(Value::String(method)) = object.remove("method") else {
        return Err(invalid("\"method\" must be a string"));
    };
    let params = match object.remove("params") {
        None => Value::Object(Default::default()),
        Some(params @ Value::Object(_)) => params,
        Some(_) => return Err(invalid("\"params\" must be an object")),
    };
    if id.is_none() && !methods::is_method(&method) {
        return Ok(None);
    }
    Ok(Some(Request { id, method, params }))
}

enum Line {
    Text(String),
    TooLong,
    End,
}

/// Reads stdin's lines on a thread of its own and hands them over: tokio's stdin would read
/// on a blocking thread that the runtime waits for when it ends, so a server stopped by a signal
/// with its stdin still open would never exit. This thread dies with the process.
fn read_stdin() -> mpsc::Receiver<Line> {
    let (send, lines) = mpsc::channel(4);
    std::thread::spawn(move || {
        let mut input = std::io::BufReader::new(std::io::stdin().lock());
        loop {
            let line = read_line(&mut input);
            let end = matches!(line, Line::End);
            if send.blocking_send(line).is_err() || end {
                break;
            }
        }
    });
    lines
}

/// The next non-empty line of `input`, at most [`MAX_LINE`] bytes.
fn read_line<R: std::io::BufRead>(input: &mut R) -> Line {
    use std::io::{BufRead as _, Read as _};
    loop {
        let mut bytes = Vec::new();
        match (&mut *input)
            .take(MAX_LINE + 1)
            .read_until(b'\n', &mut bytes)
        {
            Ok(0) | Err(_) => return Line::End,
            Ok(_) if bytes.len() as u64 > MAX_LINE && !bytes.ends_with(b"\n") => {
                // Skip the rest of the oversized line.
                let mut rest = Vec::new();
                loop {
                    rest.clear();
                    match (&mut *input).take(MAX_LINE).read_until(b'\n', &mut rest) {
                        Ok(0) | Err(_) => return Line::End,
                        Ok(_) if rest.ends_with(b"\n") => return Line::TooLong,
                        Ok(_) => {}
                    }
                }
            }
            Ok(_) => {
                let text = String::from_utf8_lossy(&bytes);
                let text = text.trim();
                if !text.is_empty() {
                    return Line::Text(text.to_string());
                }
            }
        }
    }
}

/// A JSON-RPC message as the line the writer sends.
pub fn message_line(message: &Value) -> Vec<u8> {
    let mut line = serde_json::to_vec(message).unwrap_or_default();
    line.push(b'\n');
    line
}

/// Writes each message to stdout as it comes, a line each; a closed stdout drops the rest.
async fn write_lines(mut lines: mpsc::UnboundedReceiver<Vec<u8>>) {
    let mut stdout = tokio::io::stdout();
    let mut open = true;
    while let Some(line) = lines.recv().await {
        if open {
            open = stdout.write_all(&line).await.is_ok() && stdout.flush().await.is_ok();
        }
    }
}

impl<'c, P: SessionPort> Server<'c, P> {
    /// Sends one JSON-RPC message.
    fn send(&self, message: &Value) {
        let _ = self.out.send(message_line(message));
    }

    /// Answers request `id`.
    pub fn answer(&self, id: Value, result: Result<Value, RpcError>) {
        let message = match result {
            Ok(result) => serde_json::json!({ "jsonrpc": "2.0", "id": id, "result": result }),
            Err(error) => serde_json::json!({ "jsonrpc": "2.0", "id": id, "error": error }),
        };
        self.send(&message);
    }

    /// The writer's queue, for a sink that sends notifications as output arrives.
    pub fn sender(&self) -> mpsc::UnboundedSender<Vec<u8>> {
        self.out.clone()
    }

    /// Runs one request and answers it (a notification gets no answer).
    async fn handle(&self, request: Request) {
        let answer_to = request.id.clone();
        let exec = request.method == "exec";
        let result = methods::call(self, request).await;
        if let Some(id) = answer_to {
            if exec {
                self.done(&id);
            }
            self.answer(id, result);
        }
    }

    /// The backend's client.
    pub fn client(&self) -> &'c Sandboxes<P> {
        self.client
    }

    /// Whether the server is stopping.
    pub fn stopping(&self) -> watch::Receiver<bool> {
        self.stopping.clone()
    }

    /// Registers request `id` as one `cancel` may stop (once: the serve loop registers an exec
    /// as it reads it, so that a `cancel` read right after finds it): the receiver turns true
    /// when it does.
    pub fn cancellable(&self, id: &Value) -> watch::Receiver<bool> {
        let mut cancels = self.cancels.borrow_mut();
        match cancels.get(&id.to_string()) {
            Some(cancel) => cancel.subscribe(),
            None => {
                let (cancel, cancelled) = watch::channel(false);
                cancels.insert(id.to_string(), cancel);
                cancelled
            }
        }
    }

    /// Request `id` ended: `cancel` can no longer reach it.
    pub fn done(&self, id: &Value) {
        self.cancels.borrow_mut().remove(&id.to_string());
    }

    /// Stops request `id`, now or when it starts waiting; whether it was in flight.
    pub fn cancel(&self, id: &Value) -> bool {
        match self.cancels.borrow().get(&id.to_string()) {
            Some(cancel) => {
                // Kept, not sent: an exec that subscribes later still sees it.
                cancel.send_replace(true);
                true
            }
            None => false,
        }
    }

    /// A free runner of `sandbox` for `user`: one of those it has, or a new one while it has
    /// fewer than [`runner::MAX_RUNNERS`] (broken ones are dropped); `None` when every one is
    /// busy.
    pub fn runner(&self, sandbox: &Sandbox, user: Option<&str>) -> Option<Rc<runner::Runner>> {
        let key = (sandbox.name.clone(), user.map(str::to_string));
        let mut runners = self.runners.borrow_mut();
        let pool = runners.entry(key.clone()).or_default();
        pool.retain(|runner| !runner.is_broken());
        if let Some(free) = pool.iter().find(|runner| runner.take().is_some()) {
            return Some(free.clone());
        }
        if pool.len() >= runner::MAX_RUNNERS {
            return None;
        }
        // The runner's own exec passes no variable: nothing to read from an environment.
        let (runner, exec) =
            runner::Runner::start(self.client.port(), sandbox.clone(), key.1, BTreeMap::new());
        let mut stopping = self.stopping();
        let _ = self.spawn.send(Box::pin(async move {
            tokio::pin!(exec);
            tokio::select! {
                () = &mut exec => {}
                _ = stopping.wait_for(|stop| *stop) => {
                    // Its stdin is closed now: a few seconds to end on its own.
                    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), exec).await;
                }
            }
        }));
        let runner = Rc::new(runner);
        pool.push(runner.clone());
        Some(runner)
    }

    /// Forgets the runners of a sandbox (deleted): their execs end with it.
    pub fn drop_runners(&self, sandbox: &str) {
        self.runners
            .borrow_mut()
            .retain(|(name, _), _| name != sandbox);
    }

    /// Records a session.
    pub fn add_session(&self, session: Session) {
        self.sessions
            .borrow_mut()
            .insert(session.sandbox.name.clone(), session);
    }

    /// The session named `name` (by container name or ID), if this server drives it.
    pub fn session(&self, name: &str) -> Option<Session> {
        let sessions = self.sessions.borrow();
        sessions
            .get(name)
            .or_else(|| sessions.values().find(|session| session.sandbox.id == name))
            .cloned()
    }

    /// Forgets a session (deleted), and its runners.
    pub fn remove_session(&self, name: &str) {
        self.sessions.borrow_mut().remove(name);
        self.drop_runners(name);
    }

    /// Deletes every session not kept, with what its launch made; returns their names.
    async fn close(&self) -> Vec<String> {
        let doomed: Vec<Session> = self
            .sessions
            .borrow()
            .values()
            .filter(|session| !session.keep)
            .cloned()
            .collect();
        let mut deleted = Vec::new();
        for session in doomed {
            let report = self.client.delete(&session.sandbox).await;
            for left in &report.left {
                eprintln!("agentc serve: {}: left {left}", session.sandbox.name);
            }
            self.remove_session(&session.sandbox.name);
            deleted.push(session.sandbox.name);
        }
        deleted
    }
}
