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

use byteorder::{ByteOrder, LittleEndian};
use std::io;
use std::io::prelude::*;

use crate::U24_MAX;
use tokio::io::{AsyncWrite, AsyncWriteExt};

/// The writer of mysql packet.
/// - behaves as a sync writer, while build the packet
///    so that trivial async writes could be avoided
/// - behaves like a async writer, while writing data to the output stream
/// - keeps finished packets in `pending` until `flush_all` (or until
///   `FLUSH_AT` bytes wait), so a whole reply leaves in one system call
pub struct PacketWriter<W> {
    packet_builder: PacketBuilder,
    pending: Vec<u8>,
    output_stream: W,
    /// Atoll: the session's status (autocommit, in a transaction) every OK and EOF packet
    /// carries, besides its own flags.
    pub(crate) status: crate::StatusFlags,
    /// Atoll: a read-only cursor the running COM_STMT_EXECUTE asked for (see [`Cursor`]).
    pub(crate) cursor: Cursor,
}

/// Atoll: where a COM_STMT_EXECUTE with CURSOR_TYPE_READ_ONLY stands. Its result's column
/// definitions go out, its rows are kept (they are sent by COM_STMT_FETCH), and the packets
/// that end the reply say SERVER_STATUS_CURSOR_EXISTS.
#[derive(Default)]
pub(crate) enum Cursor {
    #[default]
    Off,
    /// Asked for; opens if the statement returns a result set.
    Requested,
    /// Open: the rows kept so far, and whether row packets are being kept now (they are
    /// between the column definitions and the end of the result).
    Open { rows: Vec<Vec<u8>>, keeping: bool },
}

/// Finished packets written out even before `flush_all` once this many bytes wait, so a large
/// result set streams instead of piling up in memory.
const FLUSH_AT: usize = 64 * 1024;

// exports the internal builder as sync Write
impl<W> Write for PacketWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.packet_builder.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.packet_builder.flush()
    }
}

impl<W> PacketWriter<W> {
    pub fn new(output_stream: W) -> Self {
        Self {
            packet_builder: PacketBuilder::new(),
            pending: Vec::new(),
            output_stream,
            status: crate::StatusFlags::SERVER_STATUS_AUTOCOMMIT,
            cursor: Cursor::Off,
        }
    }
    pub fn set_seq(&mut self, seq: u8) {
        self.packet_builder.set_seq(seq)
    }

    /// The status an OK or EOF packet carries now: the session's, and an open cursor's.
    pub(crate) fn status(&self) -> crate::StatusFlags {
        match self.cursor {
            Cursor::Open { .. } => self.status | crate::StatusFlags::SERVER_STATUS_CURSOR_EXISTS,
            _ => self.status,
        }
    }
}

const PACKET_HEADER_SIZE: usize = 4;
impl<W: AsyncWrite + Unpin> PacketWriter<W> {
    /// Build packet(s) and queue them for the output stream; they are written out by
    /// `flush_all`, or here once `FLUSH_AT` bytes wait.
    pub async fn end_packet(&mut self) -> io::Result<()> {
        let builder = &mut self.packet_builder;
        if let Cursor::Open {
            rows,
            keeping: true,
        } = &mut self.cursor
        {
            rows.push(std::mem::take(&mut builder.buffer));
            return Ok(());
        }
        if !builder.is_empty() {
            // split the raw buffer at the boundary of size U24_MAX; a payload that fills its
            // last part exactly ends with an empty one, as the protocol wants. The buffer
            // keeps its capacity for the next packet (a result set's rows are built one by one).
            let mut header = [0; PACKET_HEADER_SIZE];
            let closing: Option<&[u8]> = (builder.buffer.len() % U24_MAX == 0).then_some(&[]);
            for chunk in builder.buffer.chunks(U24_MAX).chain(closing) {
                LittleEndian::write_u24(&mut header, chunk.len() as u32);
                header[3] = builder.seq;
                builder.seq = builder.seq.wrapping_add(1);
                self.pending.extend_from_slice(&header);
                self.pending.extend_from_slice(chunk);
            }
            builder.buffer.clear();
            // A connection that once built a huge packet does not keep a huge buffer.
            builder.buffer.shrink_to(FLUSH_AT);
            if self.pending.len() >= FLUSH_AT {
                self.write_pending().await?;
            }
        }
        Ok(())
    }

    async fn write_pending(&mut self) -> io::Result<()> {
        if !self.pending.is_empty() {
            self.output_stream.write_all(&self.pending).await?;
            self.pending.clear();
            // A connection that once sent a huge row does not keep its buffer.
            self.pending.shrink_to(FLUSH_AT);
        }
        Ok(())
    }

    /// Writes out every queued packet and flushes the output stream.
    pub async fn flush_all(&mut self) -> io::Result<()> {
        self.write_pending().await?;
        self.output_stream.flush().await
    }
}

// Builder that exports as sync `Write`, so that  trivial scattered async writes
// could be avoided during constructing the packet, especially the writes in mod [writers]
struct PacketBuilder {
    buffer: Vec<u8>,
    seq: u8,
}

impl Write for PacketBuilder {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // Here we take them all, and split them into raw packets later in `end_packet` if the size
        // of buffer is larger than max payload size (16MB)
        self.buffer.extend(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl PacketBuilder {
    pub fn new() -> Self {
        PacketBuilder {
            buffer: vec![],
            seq: 0,
        }
    }

    fn is_empty(&self) -> bool {
        self.buffer.is_empty()
    }

    fn set_seq(&mut self, seq: u8) {
        self.seq = seq;
    }
}
