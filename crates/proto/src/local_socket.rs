//! Where a kv node also serves its `Kv` service to processes on the same machine: a Linux
//! abstract unix socket named after its gRPC address ([`name`]). Loopback TCP costs a TCP
//! stack pass on both ends of every message; a unix socket does not, and a SQL node
//! co-located with its kv node (the playground, a three-node hybrid deployment) sends
//! every kv request that way.
//!
//! Abstract names live in the network namespace, as `127.0.0.1` does, and vanish with the
//! socket (no stale files): whoever can connect to the name reaches the very process that
//! listens on the TCP address in this namespace. Elsewhere than Linux there is no such
//! socket and clients use TCP.

use std::io;
use std::os::unix::net::{UnixListener, UnixStream};

/// The abstract socket name of the kv node whose gRPC address is `address`.
pub fn name(address: &str) -> String {
    format!("atoll-kv@{address}")
}

/// Listens on the abstract socket of `address` (non-blocking, for tokio).
pub fn bind(address: &str) -> io::Result<UnixListener> {
    let listener = UnixListener::bind_addr(&socket_addr(address)?)?;
    listener.set_nonblocking(true)?;
    Ok(listener)
}

/// Connects to the abstract socket of `address` (non-blocking, for tokio); fails at once
/// when no process in this network namespace listens there.
pub fn connect(address: &str) -> io::Result<UnixStream> {
    let stream = UnixStream::connect_addr(&socket_addr(address)?)?;
    stream.set_nonblocking(true)?;
    Ok(stream)
}

#[cfg(target_os = "linux")]
fn socket_addr(address: &str) -> io::Result<std::os::unix::net::SocketAddr> {
    use std::os::linux::net::SocketAddrExt;
    std::os::unix::net::SocketAddr::from_abstract_name(name(address))
}

#[cfg(not(target_os = "linux"))]
fn socket_addr(_address: &str) -> io::Result<std::os::unix::net::SocketAddr> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "abstract unix sockets exist on Linux only",
    ))
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::io::{Read, Write};

    #[test]
    fn a_listener_is_reached_by_its_address_and_no_other() {
        let address = format!("127.0.0.1:{}", std::process::id());
        let listener = super::bind(&address).unwrap();
        listener.set_nonblocking(false).unwrap();
        let mut client = super::connect(&address).unwrap();
        client.set_nonblocking(false).unwrap();
        client.write_all(b"ping").unwrap();
        let (mut served, _) = listener.accept().unwrap();
        let mut got = [0; 4];
        served.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"ping");
        assert!(super::connect(&format!("{address}0")).is_err());
        // The name goes with the listener.
        drop(listener);
        assert!(super::connect(&address).is_err());
    }
}
