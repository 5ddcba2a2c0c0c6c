//! What a network error means: [`is_connection_refused`] tells a refused TCP connection
//! (nothing listens at the address: the process there is gone) from every other failure.
//! The Raft transports of kv nodes and pd members act on it (an early election).

/// Whether `e` (or what caused it) is a refused TCP connection.
pub fn is_connection_refused(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(e);
    while let Some(c) = cause {
        if let Some(io) = c.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionRefused
        {
            return true;
        }
        cause = c.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_connection_is_told_from_other_failures() {
        let refused = std::net::TcpStream::connect({
            // A port nothing listens on: bound, then closed.
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        })
        .unwrap_err();
        assert!(is_connection_refused(&refused));
        let other = std::io::Error::new(std::io::ErrorKind::TimedOut, "slow");
        assert!(!is_connection_refused(&other));
    }
}
