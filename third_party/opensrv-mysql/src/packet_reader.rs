// Copyright 2021 Datafuse Labs.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

use std::io;
use std::io::prelude::*;

use tokio::io::AsyncRead;
use tokio::io::AsyncReadExt;

const PACKET_BUFFER_SIZE: usize = 4_096;

/// The largest command a client may send, as `@@max_allowed_packet` (64 MiB) says; a
/// bigger one is refused before it is buffered.
pub const MAX_ALLOWED_PACKET: usize = 64 << 20;

/// The error a command over [`MAX_ALLOWED_PACKET`] ends the connection with.
pub const PACKET_TOO_LARGE: &str = "Got a packet bigger than 'max_allowed_packet' bytes";

/// The length the packet starting at `b` declares, summed over its 16 MiB parts as far
/// as their headers are in `b`.
fn declared_len(b: &[u8]) -> usize {
    let mut at = 0;
    let mut total = 0;
    while let Some(h) = b.get(at..at + 4) {
        let len = usize::from(h[0]) | usize::from(h[1]) << 8 | usize::from(h[2]) << 16;
        total += len;
        if len != U24_MAX {
            break;
        }
        at += 4 + len;
    }
    total
}
const PACKET_LARGE_BUFFER_SIZE: usize = 1_048_576;

pub struct PacketReader<R> {
    bytes: Vec<u8>,
    start: usize,
    remaining: usize,
    /// How much of `bytes` holds bytes read (async reads; the rest is spare room).
    filled: usize,
    pub r: R,
}

impl<R> PacketReader<R> {
    pub fn new(r: R) -> Self {
        PacketReader {
            bytes: Vec::new(),
            start: 0,
            remaining: 0,
            filled: 0,
            r,
        }
    }
}

impl<R: Read> PacketReader<R> {
    #[allow(dead_code)]
    pub fn next(&mut self) -> io::Result<Option<(u8, Packet<'_>)>> {
        self.start = self.bytes.len() - self.remaining;

        loop {
            if self.remaining != 0 {
                let bytes = {
                    // NOTE: this is all sorts of unfortunate. what we really want to do is to give
                    // &self.bytes[self.start..] to `packet()`, and the lifetimes should all work
                    // out. however, without NLL, borrowck doesn't realize that self.bytes is no
                    // longer borrowed after the match, and so can be mutated.
                    let bytes = &self.bytes[self.start..];
                    unsafe { ::std::slice::from_raw_parts(bytes.as_ptr(), bytes.len()) }
                };

                match packet(bytes) {
                    Ok((rest, p)) => {
                        self.remaining = rest.len();
                        return Ok(Some(p));
                    }
                    Err(nom::Err::Incomplete(_)) | Err(nom::Err::Error(_)) => {}
                    Err(nom::Err::Failure(ctx)) => {
                        let err = Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!("{:?}", ctx),
                        ));
                        self.bytes.truncate(self.remaining);
                        return err;
                    }
                }
            }

            // we need to read some more
            self.bytes.drain(0..self.start);
            self.start = 0;
            let end = self.bytes.len();
            self.bytes.resize(std::cmp::max(4096, end * 2), 0);
            let read = {
                let buf = &mut self.bytes[end..];
                self.r.read(buf)?
            };
            self.bytes.truncate(end + read);
            self.remaining = self.bytes.len();

            if read == 0 {
                if self.bytes.is_empty() {
                    return Ok(None);
                } else {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!("{} unhandled bytes", self.bytes.len()),
                    ));
                }
            }
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for PacketReader<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        if self.remaining != 0 {
            let unread = self.filled - self.remaining..self.filled;
            buf.put_slice(&self.bytes[unread]);
            self.bytes.clear();
            self.start = 0;
            self.remaining = 0;
            self.filled = 0;
            std::task::Poll::Ready(Ok(()))
        } else {
            std::pin::Pin::new(&mut self.r).poll_read(cx, buf)
        }
    }
}

impl<R: AsyncRead + Unpin> PacketReader<R> {
    pub async fn next_async(&mut self) -> io::Result<Option<(u8, Packet<'_>)>> {
        self.start = self.filled - self.remaining;

        let mut buffer_size = PACKET_BUFFER_SIZE;
        loop {
            if self.remaining != 0 {
                let bytes = {
                    // NOTE: this is all sorts of unfortunate. what we really want to do is to give
                    // &self.bytes[self.start..] to `packet()`, and the lifetimes should all work
                    // out. however, without NLL, borrowck doesn't realize that self.bytes is no
                    // longer borrowed after the match, and so can be mutated.
                    let bytes = &self.bytes[self.start..];
                    unsafe { ::std::slice::from_raw_parts(bytes.as_ptr(), self.remaining) }
                };
                match packet(bytes) {
                    Ok((rest, p)) => {
                        // `p` borrows `self.bytes`: it must stay where it is until the
                        // next call (0.7.0 replaced it here, freeing the packet's bytes);
                        // the next call starts `remaining` bytes before `filled`.
                        self.remaining = rest.len();
                        if p.1.as_ref().len() > MAX_ALLOWED_PACKET {
                            return Err(io::Error::new(io::ErrorKind::InvalidData, PACKET_TOO_LARGE));
                        }
                        return Ok(Some(p));
                    }
                    Err(nom::Err::Incomplete(_)) | Err(nom::Err::Error(_)) => {}
                    Err(nom::Err::Failure(ctx)) => {
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!("{:?}", ctx),
                        ));
                    }
                }
            }

            if declared_len(&self.bytes[self.start..self.filled]) > MAX_ALLOWED_PACKET {
                return Err(io::Error::new(io::ErrorKind::InvalidData, PACKET_TOO_LARGE));
            }
            // we need to read some more: the unread bytes move to the front, and the
            // buffer grows (at least doubling) when the room after them is short.
            self.bytes.copy_within(self.start..self.filled, 0);
            self.start = 0;
            let end = self.remaining;
            self.filled = end;

            if self.bytes.len() - end < buffer_size {
                let new_len = end + std::cmp::max(buffer_size, end);
                self.bytes.resize(new_len, 0);
            }
            let read = {
                let buf = &mut self.bytes[end..];
                self.r.read(buf).await?
            };
            self.remaining = end + read;
            self.filled = end + read;
            // use a larger buffer size to reduce bytes resize times.
            buffer_size = PACKET_LARGE_BUFFER_SIZE;

            if read == 0 {
                if self.remaining == 0 {
                    return Ok(None);
                } else {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!("{} unhandled bytes", self.remaining),
                    ));
                }
            }
        }
    }
}

pub fn fullpacket(i: &[u8]) -> nom::IResult<&[u8], (u8, &[u8])> {
    let (i, _) = nom::bytes::complete::tag(&[0xff, 0xff, 0xff])(i)?;
    let (i, seq) = nom::bytes::complete::take(1u8)(i)?;
    let (i, bytes) = nom::bytes::complete::take(U24_MAX)(i)?;
    Ok((i, (seq[0], bytes)))
}

pub fn onepacket(i: &[u8]) -> nom::IResult<&[u8], (u8, &[u8])> {
    let (i, length) = nom::number::complete::le_u24(i)?;
    let (i, seq) = nom::bytes::complete::take(1u8)(i)?;
    let (i, bytes) = nom::bytes::complete::take(length)(i)?;
    Ok((i, (seq[0], bytes)))
}

// Clone because of https://github.com/Geal/nom/issues/1008
#[derive(Clone)]
pub struct Packet<'a>(&'a [u8], Vec<u8>);

impl<'a> Packet<'a> {
    fn extend(&mut self, bytes: &'a [u8]) {
        if self.0.is_empty() {
            if self.1.is_empty() {
                // first extend
                self.0 = bytes;
            } else {
                // later extend
                self.1.extend(bytes);
            }
        } else {
            assert!(self.1.is_empty());
            let mut v = self.0.to_vec();
            v.extend(bytes);
            self.1 = v;
            self.0 = &[];
        }
    }
}

impl<'a> AsRef<[u8]> for Packet<'a> {
    fn as_ref(&self) -> &[u8] {
        if self.1.is_empty() {
            self.0
        } else {
            &self.1
        }
    }
}

use crate::U24_MAX;
use std::ops::Deref;

impl<'a> Deref for Packet<'a> {
    type Target = [u8];
    fn deref(&self) -> &Self::Target {
        self.as_ref()
    }
}

/// One command: parts of 0xFFFFFF bytes, each numbered one past the one before, then a
/// shorter last part. (Atoll: parts out of order are a parse failure, the connection's
/// error, where 0.7.0 asserted and panicked.)
pub(crate) fn packet(i: &[u8]) -> nom::IResult<&[u8], (u8, Packet<'_>)> {
    let out_of_order =
        |at| nom::Err::Failure(nom::error::Error::new(at, nom::error::ErrorKind::Verify));
    let mut rest = i;
    let mut joined: Option<(u8, Packet<'_>)> = None;
    while let Ok((after, (seq, part))) = fullpacket(rest) {
        joined = Some(match joined {
            None => (seq, Packet(part, Vec::new())),
            Some((previous, mut pkt)) => {
                if seq != previous.wrapping_add(1) {
                    return Err(out_of_order(rest));
                }
                pkt.extend(part);
                (seq, pkt)
            }
        });
        rest = after;
    }
    let (after, (seq, last)) = onepacket(rest)?;
    let pkt = match joined {
        None => Packet(last, Vec::new()),
        Some((previous, mut pkt)) => {
            if seq != previous.wrapping_add(1) {
                return Err(out_of_order(rest));
            }
            pkt.extend(last);
            pkt
        }
    };
    Ok((after, (seq, pkt)))
}
