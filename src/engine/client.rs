//! The client end of the engine's socket: what the CLI commands and attached consoles
//! use. It says hello, then sends requests and reads the answers; who it is, the server
//! learns from the kernel.

use std::io::BufReader;
use std::os::unix::net::UnixStream;
use std::path::Path;

use anyhow::{Context, Result};

use super::api::{
    ClientMessage, Command, Outcome, Question, Request, ServerMessage, Snapshot, PROTOCOL_VERSION,
};
use super::server::socket_path;
use super::wire::{self, MAX_SERVER_FRAME};

pub struct Client {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    next_id: u64,
    /// When the engine started, who it says we are, and whether we may decide.
    pub started_at: String,
    pub you: String,
    pub read_only: bool,
}

impl Client {
    /// Attaches to the engine serving `data_dir`. None when no engine serves it (no
    /// socket, or nothing listening on it); an error when one refuses us, with why.
    pub fn connect(data_dir: &Path, read_only: bool) -> Result<Option<Client>> {
        let path = socket_path(data_dir);
        let stream = match UnixStream::connect(&path) {
            Ok(stream) => stream,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
                ) =>
            {
                return Ok(None)
            }
            Err(e) => {
                return Err(e).with_context(|| format!("cannot connect to {}", path.display()))
            }
        };
        let mut writer = stream.try_clone()?;
        let mut reader = BufReader::new(stream);
        wire::send(
            &mut writer,
            &ClientMessage::Hello {
                protocol: PROTOCOL_VERSION,
                read_only,
            },
        )?;
        match wire::receive::<ServerMessage>(&mut reader, MAX_SERVER_FRAME)
            .with_context(|| format!("the engine on {}", path.display()))?
        {
            ServerMessage::Hello {
                started_at,
                you,
                read_only,
                ..
            } => Ok(Some(Client {
                reader,
                writer,
                next_id: 1,
                started_at,
                you,
                read_only,
            })),
            ServerMessage::Goodbye { reason } => {
                anyhow::bail!(
                    "the engine on {} refused to attach: {reason}",
                    path.display()
                )
            }
            other => anyhow::bail!("the engine on {} answered {other:?}", path.display()),
        }
    }

    /// A second handle on the connection: to write from another thread while this one
    /// reads (a console's bridge), or to ask the kernel who serves it.
    pub fn stream(&self) -> std::io::Result<UnixStream> {
        self.writer.try_clone()
    }

    pub fn send(&mut self, message: &ClientMessage) -> Result<()> {
        wire::send(&mut self.writer, message).context("the engine closed the connection")
    }

    /// The next message from the engine.
    pub fn receive(&mut self) -> Result<ServerMessage> {
        wire::receive(&mut self.reader, MAX_SERVER_FRAME).map_err(anyhow::Error::from)
    }

    /// Sends one command and waits for its answer (snapshots meanwhile are skipped).
    pub fn request(&mut self, command: Command) -> Result<Outcome> {
        self.request_as(command, None)
    }

    /// [`Client::request`] with the client's own request id (see
    /// [`new_request_id`]): the engine keeps its answer by that id, so it can be asked
    /// for again if this connection is lost before the answer comes.
    pub fn request_as(
        &mut self,
        command: Command,
        client_request: Option<String>,
    ) -> Result<Outcome> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&ClientMessage::Request(Request {
            id,
            command,
            client_request,
        }))?;
        loop {
            match self.receive()? {
                ServerMessage::Reply(reply) if reply.id == id => return Ok(reply.outcome),
                ServerMessage::Goodbye { reason } => anyhow::bail!("the engine closed: {reason}"),
                _ => continue,
            }
        }
    }

    /// Asks the engine a read only it can answer; its report, or why it has none.
    pub fn ask(&mut self, question: Question) -> Result<Result<serde_json::Value, String>> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&ClientMessage::Ask { id, question })?;
        loop {
            match self.receive()? {
                ServerMessage::Answer {
                    id: answered,
                    answer,
                } if answered == id => return Ok(answer),
                ServerMessage::Goodbye { reason } => anyhow::bail!("the engine closed: {reason}"),
                _ => continue,
            }
        }
    }

    /// The engine's current state (it sends one snapshot right after the hello).
    pub fn snapshot(&mut self) -> Result<Snapshot> {
        loop {
            if let ServerMessage::Snapshot(snapshot) = self.receive()? {
                return Ok(*snapshot);
            }
        }
    }
}

/// A request id no other client will send: 128 random bits from the kernel, in hex.
pub fn new_request_id() -> Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .context("reading /dev/urandom for a request id")?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
