//! A WebSocket's server-to-client frames, scrubbed as they pass ([`FrameScrubber`]): each data
//! message's payload through one [`Window`] (so a key split across its fragments is found), each
//! control frame's payload on its own. A frame that carries extension bits (`RSV1`-`RSV3`, such
//! as `permessage-deflate`'s) is refused: the proxy asks for no extension, and one it cannot read
//! could hide a key.
//!
//! Frames are written anew, unmasked: a payload byte held back because it may begin a key goes
//! out in the next fragment. RFC 6455 section 5.4 lets an intermediary refragment a message that
//! uses no extension; the message's bytes, its type and its end are unchanged.
//!
//! ```
//! use std::sync::Arc;
//! use agentc_egress::scrub::{websocket::FrameScrubber, Needle, Needles};
//! let needles = Arc::new(Needles::new(vec![Needle::new("a", "key", b"sk-real-key-42")]));
//! let mut frames = FrameScrubber::new(needles);
//! // A text message in two fragments: "key sk-real-" and "key-42".
//! let mut input = vec![0x01, 12];
//! input.extend_from_slice(b"key sk-real-");
//! input.extend_from_slice(&[0x80, 6]);
//! input.extend_from_slice(b"key-42");
//! let out = frames.push(&input).unwrap();
//! // "key " goes out at once; the rest of the key waits for the next fragment.
//! assert_eq!(out, [&[0x01, 4][..], b"key ", &[0x80, 14], b"redactedredact"].concat());
//! assert_eq!(frames.take_hits().total(), 1);
//! ```

use std::sync::Arc;

use super::{Hits, Needles, Window};

/// Where the reader is in the frame stream.
#[derive(Debug, Clone, Copy)]
enum State {
    /// Reading a frame's header.
    Header,
    /// Reading a data frame's payload.
    Data {
        remaining: u64,
        fin: bool,
        mask: Option<[u8; 4]>,
        at: usize,
    },
    /// Reading a control frame's payload (at most 125 bytes).
    Control {
        opcode: u8,
        len: usize,
        mask: Option<[u8; 4]>,
    },
}

/// The server-to-client direction of one WebSocket, scrubbed: see the module documentation.
#[derive(Debug)]
pub struct FrameScrubber {
    needles: Arc<Needles>,
    window: Window,
    buffer: Vec<u8>,
    state: State,
    /// The opcode of the data message being read (text or binary).
    message: u8,
    /// Whether a fragment of that message was written already.
    started: bool,
    control_hits: Hits,
}

impl FrameScrubber {
    /// A scrubber at the start of a WebSocket's frames.
    pub fn new(needles: Arc<Needles>) -> FrameScrubber {
        FrameScrubber {
            window: Window::new(needles.clone()),
            needles,
            buffer: Vec::new(),
            state: State::Header,
            message: 1,
            started: false,
            control_hits: Hits::default(),
        }
    }

    /// Takes the next bytes from the server; returns the frames to write to the client, or why
    /// the stream cannot go on.
    pub fn push(&mut self, input: &[u8]) -> Result<Vec<u8>, String> {
        self.buffer.extend_from_slice(input);
        let mut out = Vec::new();
        let mut at = 0;
        loop {
            match self.state {
                State::Header => {
                    let Some((header, len, opcode)) = parse_header(&self.buffer[at..])? else {
                        break;
                    };
                    at += len;
                    if matches!(header, State::Data { .. }) && opcode != 0 {
                        self.message = opcode;
                        self.started = false;
                    }
                    self.state = header;
                }
                State::Control { opcode, len, mask } => {
                    if self.buffer.len() - at < len {
                        break;
                    }
                    let mut payload = self.buffer[at..at + len].to_vec();
                    at += len;
                    unmask(&mut payload, mask, 0);
                    let (payload, hits) = self.needles.scrub(&payload);
                    self.control_hits.merge(&hits);
                    frame(&mut out, true, opcode, &payload);
                    self.state = State::Header;
                }
                State::Data {
                    remaining,
                    fin,
                    mask,
                    at: offset,
                } => {
                    let available = (self.buffer.len() - at) as u64;
                    let n = remaining.min(available) as usize;
                    let mut payload = self.buffer[at..at + n].to_vec();
                    at += n;
                    unmask(&mut payload, mask, offset);
                    let mut released = self.window.push(&payload);
                    let remaining = remaining - n as u64;
                    let opcode = if self.started { 0 } else { self.message };
                    if remaining == 0 && fin {
                        released.extend(self.window.finish());
                        frame(&mut out, true, opcode, &released);
                        self.started = false;
                        self.state = State::Header;
                        continue;
                    }
                    if !released.is_empty() {
                        frame(&mut out, false, opcode, &released);
                        self.started = true;
                    }
                    if remaining == 0 {
                        self.state = State::Header;
                        continue;
                    }
                    self.state = State::Data {
                        remaining,
                        fin,
                        mask,
                        at: offset + n,
                    };
                    break;
                }
            }
        }
        self.buffer.drain(..at);
        Ok(out)
    }

    /// Takes the replacements counted so far.
    pub fn take_hits(&mut self) -> Hits {
        let mut hits = self.window.take_hits();
        hits.merge(&std::mem::take(&mut self.control_hits));
        hits
    }
}

/// Reads a frame header: the state it leads to, its length and its opcode, `None` when
/// incomplete.
fn parse_header(bytes: &[u8]) -> Result<Option<(State, usize, u8)>, String> {
    let [first, second, ..] = *bytes else {
        return Ok(None);
    };
    if first & 0x70 != 0 {
        return Err("a WebSocket frame with extension bits, which the proxy cannot scan".into());
    }
    let fin = first & 0x80 != 0;
    let opcode = first & 0x0f;
    let masked = second & 0x80 != 0;
    let (len, mut at) = match second & 0x7f {
        126 if bytes.len() >= 4 => (u64::from(u16::from_be_bytes([bytes[2], bytes[3]])), 4),
        127 if bytes.len() >= 10 => {
            let mut eight = [0u8; 8];
            eight.copy_from_slice(&bytes[2..10]);
            (u64::from_be_bytes(eight), 10)
        }
        126 | 127 => return Ok(None),
        short => (u64::from(short), 2),
    };
    let mask = if masked {
        if bytes.len() < at + 4 {
            return Ok(None);
        }
        let mut key = [0u8; 4];
        key.copy_from_slice(&bytes[at..at + 4]);
        at += 4;
        Some(key)
    } else {
        None
    };
    if opcode & 0x08 != 0 {
        if !fin || len > 125 {
            return Err("a fragmented or oversized WebSocket control frame".into());
        }
        return Ok(Some((
            State::Control {
                opcode,
                len: len as usize,
                mask,
            },
            at,
            opcode,
        )));
    }
    Ok(Some((
        State::Data {
            remaining: len,
            fin,
            mask,
            at: 0,
        },
        at,
        opcode,
    )))
}

/// Unmasks `payload` (which starts `offset` bytes into its frame's payload).
fn unmask(payload: &mut [u8], mask: Option<[u8; 4]>, offset: usize) {
    if let Some(key) = mask {
        for (index, byte) in payload.iter_mut().enumerate() {
            *byte ^= key[(offset + index) % 4];
        }
    }
}

/// Writes an unmasked frame.
fn frame(out: &mut Vec<u8>, fin: bool, opcode: u8, payload: &[u8]) {
    out.push(if fin { 0x80 } else { 0 } | opcode);
    match payload.len() {
        len @ 0..=125 => out.push(len as u8),
        len @ 126..=0xffff => {
            out.push(126);
            out.extend_from_slice(&(len as u16).to_be_bytes());
        }
        len => {
            out.push(127);
            out.extend_from_slice(&(len as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(payload);
}
