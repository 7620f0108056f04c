//! `[openlineage]`: the listener's address is free for `dataward serve`, or a dataward
//! listener already answers there (an engine serving); anything else on it is a ✗, as
//! serve would not start. The tailed file is read from where it is (not there yet is
//! fine: the producer writes it on its first event). The token was checked with the
//! config.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

use super::Line;
use crate::config::Config;
use crate::engine::openlineage::PATH;

pub fn check(config: &Config) -> Vec<Line> {
    let Some(ol) = &config.openlineage else {
        return Vec::new();
    };
    let mut lines = Vec::new();
    if let Some(addr) = ol.listen_addr() {
        lines.push(listen(addr));
    }
    if let Some(file) = &ol.file {
        let path = config.resolve(file);
        lines.push(match std::fs::metadata(&path) {
            Ok(meta) if meta.is_file() => Line::ok(
                "openlineage file",
                format!("{} ({} bytes) is tailed", path.display(), meta.len()),
            ),
            Ok(_) => Line::bad(
                "openlineage file",
                format!("{} is not a file", path.display()),
                "point [openlineage] file at the JSONL the file transport writes",
            ),
            Err(_) => Line::ok(
                "openlineage file",
                format!(
                    "{} is not there yet; tailed once the producer writes it",
                    path.display()
                ),
            ),
        });
    }
    lines
}

fn listen(addr: SocketAddr) -> Line {
    let what = "openlineage listen";
    if TcpListener::bind(addr).is_ok() {
        return Line::ok(
            what,
            format!("{addr} is free: dataward serve listens there"),
        );
    }
    if answers_as_dataward(addr) {
        return Line::ok(
            what,
            format!("a dataward listener answers on http://{addr}{PATH}"),
        );
    }
    Line::bad(
        what,
        format!("{addr} is taken by something that is not dataward's listener"),
        "stop what holds the port, or choose another [openlineage] listen port",
    )
}

/// A GET is refused 405 by dataward's listener, with its own words.
fn answers_as_dataward(addr: SocketAddr) -> bool {
    let Ok(mut conn) = TcpStream::connect_timeout(&addr, Duration::from_secs(2)) else {
        return false;
    };
    let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
    if write!(conn, "GET {PATH} HTTP/1.1\r\nHost: {addr}\r\n\r\n").is_err() {
        return false;
    }
    let mut answer = String::new();
    let _ = conn.take(4096).read_to_string(&mut answer);
    answer.starts_with("HTTP/1.1 405") && answer.contains("only POST")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_held_by_something_else_is_a_cross() {
        let held = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = held.local_addr().unwrap();
        // Whatever holds it answers nothing dataward would.
        std::thread::spawn(move || {
            for conn in held.incoming().flatten() {
                let mut conn = conn;
                let _ = conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
            }
        });
        let line = listen(addr);
        assert!(!line.ok, "{}", line.detail);
        assert!(
            line.detail.contains("not dataward's listener"),
            "{}",
            line.detail
        );

        let free = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let line = listen(free);
        assert!(
            line.ok && line.detail.contains("is free"),
            "{}",
            line.detail
        );
    }
}
