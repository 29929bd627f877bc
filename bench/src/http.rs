//! A small HTTP/1.1 client for the load: keep-alive connections over plain TCP, each request
//! written in one `write` and each answer parsed only as far as the harness needs (status,
//! `Set-Cookie`, the body by `Content-Length` or chunks). A general-purpose client (reqwest,
//! with hyper's pool and header maps) cost the harness about a core at 50 k requests a second,
//! cores the server then did not have; this one costs a fraction of that, as wrk does.
use std::sync::Mutex;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Where requests go: `http://host:port` (TLS is not spoken: measure behind no proxy).
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// `host:port`, to connect to.
    addr: String,
    /// The `Host` header.
    host: String,
}

impl Endpoint {
    pub fn parse(base: &str) -> Result<Self, String> {
        let url = url::Url::parse(base).map_err(|e| format!("--url {base}: {e}"))?;
        if url.scheme() != "http" {
            return Err(format!(
                "--url {base}: the harness speaks plain http only (measure the server itself, \
                 not a TLS proxy in front of it)"
            ));
        }
        let host = url.host_str().ok_or(format!("--url {base}: no host"))?;
        let port = url.port_or_known_default().unwrap_or(80);
        let host = match url.host() {
            Some(url::Host::Ipv6(_)) => format!("[{host}]"),
            _ => host.to_owned(),
        };
        Ok(Self {
            addr: format!("{host}:{port}"),
            host: match url.port() {
                Some(p) => format!("{host}:{p}"),
                None => host,
            },
        })
    }
}

/// One answer: its status, the `name=value` of each cookie it sets (not those it clears), and
/// its body as it came.
#[derive(Debug, Default)]
pub struct Answer {
    pub status: u16,
    pub cookies: Vec<String>,
    pub body: Vec<u8>,
}

/// A pool of keep-alive connections to one endpoint: a request takes an idle one (or opens
/// one) and gives it back when its answer has been read whole.
pub struct Client {
    endpoint: Endpoint,
    idle: Mutex<Vec<Conn>>,
    timeout: Duration,
}

struct Conn {
    stream: TcpStream,
    /// Bytes read past the last answer (none, with one request at a time per connection).
    buf: Vec<u8>,
    /// Requests this connection has carried.
    used: u64,
}

impl Client {
    pub fn new(endpoint: Endpoint, timeout: Duration) -> Self {
        Self {
            endpoint,
            idle: Mutex::new(Vec::new()),
            timeout,
        }
    }

    /// One request. `body` is sent as JSON. Errors are `"timeout"`, `"connect"` or
    /// `"protocol: …"` (an answer this client cannot read).
    pub async fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Result<Answer, String> {
        let request = self.request(method, path, headers, body);
        match tokio::time::timeout(self.timeout, self.exchange(&request)).await {
            Ok(r) => r,
            Err(_) => Err("timeout".into()),
        }
    }

    fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Vec<u8> {
        let mut r = Vec::with_capacity(256 + body.map_or(0, <[u8]>::len));
        r.extend_from_slice(method.as_bytes());
        r.push(b' ');
        r.extend_from_slice(path.as_bytes());
        r.extend_from_slice(b" HTTP/1.1\r\nhost: ");
        r.extend_from_slice(self.endpoint.host.as_bytes());
        r.extend_from_slice(b"\r\n");
        for (k, v) in headers {
            r.extend_from_slice(k.as_bytes());
            r.extend_from_slice(b": ");
            r.extend_from_slice(v.as_bytes());
            r.extend_from_slice(b"\r\n");
        }
        if let Some(b) = body {
            r.extend_from_slice(b"content-type: application/json\r\ncontent-length: ");
            r.extend_from_slice(b.len().to_string().as_bytes());
            r.extend_from_slice(b"\r\n\r\n");
            r.extend_from_slice(b);
        } else if method != "GET" {
            r.extend_from_slice(b"content-length: 0\r\n\r\n");
        } else {
            r.extend_from_slice(b"\r\n");
        }
        r
    }

    async fn exchange(&self, request: &[u8]) -> Result<Answer, String> {
        let idle = self.idle.lock().ok().and_then(|mut v| v.pop());
        if let Some(mut conn) = idle {
            match conn.exchange(request).await {
                Ok((answer, keep)) => {
                    self.give_back(conn, keep);
                    return Ok(answer);
                }
                // A server closes idle connections: a reused one that closed before answering
                // anything (so before reading the request) is retried once on a new one.
                Err(Failure::Closed) => {}
                Err(Failure::Other(e)) => return Err(e),
            }
        }
        let stream = TcpStream::connect(&self.endpoint.addr)
            .await
            .map_err(|_| "connect".to_owned())?;
        stream.set_nodelay(true).map_err(|_| "connect".to_owned())?;
        let mut conn = Conn {
            stream,
            buf: Vec::with_capacity(8192),
            used: 0,
        };
        match conn.exchange(request).await {
            Ok((answer, keep)) => {
                self.give_back(conn, keep);
                Ok(answer)
            }
            Err(Failure::Closed) => Err("protocol: the connection closed before an answer".into()),
            Err(Failure::Other(e)) => Err(e),
        }
    }

    fn give_back(&self, conn: Conn, keep: bool) {
        if keep {
            if let Ok(mut v) = self.idle.lock() {
                v.push(conn);
            }
        }
    }
}

enum Failure {
    /// Closed before a byte of an answer came.
    Closed,
    Other(String),
}

impl Conn {
    /// Sends `request`, reads its answer whole; whether the connection may carry another.
    async fn exchange(&mut self, request: &[u8]) -> Result<(Answer, bool), Failure> {
        let fresh = self.used == 0;
        self.used += 1;
        let io = |e: std::io::Error| Failure::Other(format!("protocol: {e}"));
        if let Err(e) = self.stream.write_all(request).await {
            return Err(if fresh { io(e) } else { Failure::Closed });
        }
        self.buf.clear();
        // The head.
        let head_end = loop {
            if let Some(i) = find(&self.buf, b"\r\n\r\n") {
                break i + 4;
            }
            if self.buf.len() > 64 * 1024 {
                return Err(Failure::Other("protocol: a head over 64 KiB".into()));
            }
            let n = match self.read_more().await {
                Ok(n) => n,
                // Reset by a server that had closed it: as closed.
                Err(_) if self.buf.is_empty() && !fresh => return Err(Failure::Closed),
                Err(e) => return Err(io(e)),
            };
            if n == 0 {
                return Err(if self.buf.is_empty() && !fresh {
                    Failure::Closed
                } else {
                    Failure::Other("protocol: closed in the head".into())
                });
            }
        };
        let head = parse_head(&self.buf[..head_end]).map_err(Failure::Other)?;
        let mut answer = Answer {
            status: head.status,
            cookies: head.cookies,
            body: Vec::new(),
        };
        let mut rest = self.buf.split_off(head_end);
        match head.length {
            Length::Known(len) => {
                while rest.len() < len {
                    let n = read_into(&mut self.stream, &mut rest).await.map_err(io)?;
                    if n == 0 {
                        return Err(Failure::Other("protocol: closed in the body".into()));
                    }
                }
                rest.truncate(len);
                answer.body = rest;
            }
            Length::Chunked => loop {
                match dechunk(&rest).map_err(Failure::Other)? {
                    Some(body) => {
                        answer.body = body;
                        break;
                    }
                    None => {
                        let n = read_into(&mut self.stream, &mut rest).await.map_err(io)?;
                        if n == 0 {
                            return Err(Failure::Other("protocol: closed in the chunks".into()));
                        }
                    }
                }
            },
            Length::UntilClose => {
                while read_into(&mut self.stream, &mut rest).await.map_err(io)? > 0 {}
                answer.body = rest;
                return Ok((answer, false));
            }
        }
        Ok((answer, !head.close))
    }

    async fn read_more(&mut self) -> std::io::Result<usize> {
        read_into(&mut self.stream, &mut self.buf).await
    }
}

async fn read_into(stream: &mut TcpStream, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    buf.reserve(8192);
    stream.read_buf(buf).await
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[derive(Debug, PartialEq)]
enum Length {
    Known(usize),
    Chunked,
    UntilClose,
}

#[derive(Debug)]
struct Head {
    status: u16,
    cookies: Vec<String>,
    length: Length,
    close: bool,
}

fn parse_head(head: &[u8]) -> Result<Head, String> {
    let text = std::str::from_utf8(head).map_err(|_| "protocol: a head that is not UTF-8")?;
    let mut lines = text.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .strip_prefix("HTTP/1.1 ")
        .or_else(|| status_line.strip_prefix("HTTP/1.0 "))
        .and_then(|s| s.get(..3))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("protocol: status line {status_line:?}"))?;
    let mut h = Head {
        status,
        cookies: Vec::new(),
        length: Length::UntilClose,
        close: status_line.starts_with("HTTP/1.0"),
    };
    for line in lines.filter(|l| !l.is_empty()) {
        let Some((name, value)) = line.split_once(':') else {
            return Err(format!("protocol: header line {line:?}"));
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            let len = value
                .parse()
                .map_err(|_| format!("protocol: content-length {value:?}"))?;
            if h.length != Length::Chunked {
                h.length = Length::Known(len);
            }
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            if value.eq_ignore_ascii_case("chunked") {
                h.length = Length::Chunked;
            }
        } else if name.eq_ignore_ascii_case("connection") {
            h.close = value.eq_ignore_ascii_case("close");
        } else if name.eq_ignore_ascii_case("set-cookie") && !value.contains("Max-Age=0") {
            if let Some(pair) = value.split(';').next() {
                h.cookies.push(pair.trim().to_owned());
            }
        }
    }
    // Answers that never have a body.
    if status == 204 || status == 304 || (100..200).contains(&status) {
        h.length = Length::Known(0);
    }
    Ok(h)
}

/// The body of a chunked answer once `data` holds all of it (through the last chunk and the
/// trailers' end), else `None`.
fn dechunk(data: &[u8]) -> Result<Option<Vec<u8>>, String> {
    let mut body = Vec::new();
    let mut at = 0;
    loop {
        let Some(line_end) = find(&data[at..], b"\r\n") else {
            return Ok(None);
        };
        let size_text = std::str::from_utf8(&data[at..at + line_end])
            .map_err(|_| "protocol: a chunk size that is not text")?;
        let size_text = size_text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| format!("protocol: chunk size {size_text:?}"))?;
        at += line_end + 2;
        if size == 0 {
            // Trailers (usually none), then an empty line.
            return Ok(find(&data[at..], b"\r\n")
                .filter(|&i| i == 0 || find(&data[at..], b"\r\n\r\n").is_some())
                .map(|_| body));
        }
        if data.len() < at + size + 2 {
            return Ok(None);
        }
        body.extend_from_slice(&data[at..at + size]);
        at += size + 2;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn heads_are_read_for_what_the_harness_needs() {
        let h = parse_head(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
              Set-Cookie: gatehouse.session_token=abc.def%3D; Max-Age=604800; Path=/; HttpOnly\r\n\
              set-cookie: gatehouse.dont_remember=; Max-Age=0; Path=/\r\n\
              content-length: 12\r\n\r\n",
        )
        .unwrap();
        assert_eq!(h.status, 200);
        assert_eq!(h.cookies, ["gatehouse.session_token=abc.def%3D"]);
        assert_eq!(h.length, Length::Known(12));
        assert!(!h.close);
        let h = parse_head(
            b"HTTP/1.1 403 Forbidden\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
        )
        .unwrap();
        assert_eq!((h.status, h.length, h.close), (403, Length::Chunked, true));
        assert_eq!(
            parse_head(b"HTTP/1.1 204 No Content\r\n\r\n")
                .unwrap()
                .length,
            Length::Known(0)
        );
        assert!(parse_head(b"SPDY 200\r\n\r\n").is_err());
        assert!(parse_head(b"HTTP/1.1 200 OK\r\ncontent-length: x\r\n\r\n").is_err());
    }

    #[test]
    fn chunked_bodies_are_joined_once_complete() {
        let full = b"5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\n\r\n";
        assert_eq!(dechunk(full).unwrap().unwrap(), b"hello, world");
        for cut in 0..full.len() {
            assert_eq!(dechunk(&full[..cut]).unwrap(), None, "cut at {cut}");
        }
        assert!(dechunk(b"zz\r\nhello\r\n").is_err());
    }

    /// Against a real server on loopback: keep-alive reuse, a body by length and by chunks,
    /// cookies, and a connection the server closed while idle (retried once on a new one).
    #[tokio::test]
    async fn talks_to_a_server_over_kept_connections() {
        use tokio::net::TcpListener;
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = accepted.clone();
        tokio::spawn(async move {
            loop {
                let (mut s, _) = listener.accept().await.unwrap();
                let n = count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut served = 0;
                    loop {
                        let mut chunk = [0u8; 4096];
                        let k = s.read(&mut chunk).await.unwrap_or(0);
                        if k == 0 {
                            return;
                        }
                        buf.extend_from_slice(&chunk[..k]);
                        let Some(end) = find(&buf, b"\r\n\r\n") else {
                            continue;
                        };
                        let head = String::from_utf8_lossy(&buf[..end]).to_string();
                        let len: usize = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length: "))
                            .map_or(0, |v| v.parse().unwrap());
                        if buf.len() < end + 4 + len {
                            continue;
                        }
                        let body =
                            String::from_utf8_lossy(&buf[end + 4..end + 4 + len]).to_string();
                        buf.clear();
                        let answer = if head.starts_with("POST /chunked") {
                            format!(
                                "HTTP/1.1 201 Created\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{body}\r\n0\r\n\r\n",
                                body.len()
                            )
                        } else {
                            format!(
                                "HTTP/1.1 200 OK\r\nset-cookie: a=1; Path=/\r\ncontent-length: {}\r\n\r\n{}",
                                head.len(),
                                head
                            )
                        };
                        s.write_all(answer.as_bytes()).await.unwrap();
                        served += 1;
                        // The first connection is closed after two answers, as an idle
                        // timeout would.
                        if n == 0 && served == 2 {
                            return;
                        }
                    }
                });
            }
        });
        let c = Client::new(
            Endpoint::parse(&format!("http://{addr}")).unwrap(),
            Duration::from_secs(5),
        );
        let a = c
            .send("GET", "/x?y=1", &[("cookie", "k=v")], None)
            .await
            .unwrap();
        assert_eq!(a.status, 200);
        assert_eq!(a.cookies, ["a=1"]);
        let head = String::from_utf8(a.body).unwrap();
        assert!(
            head.starts_with("GET /x?y=1 HTTP/1.1\r\nhost: 127.0.0.1:"),
            "{head}"
        );
        assert!(head.contains("\r\ncookie: k=v"), "{head}");
        let a = c
            .send("POST", "/chunked", &[], Some(br#"{"a":1}"#))
            .await
            .unwrap();
        assert_eq!((a.status, a.body.as_slice()), (201, &br#"{"a":1}"#[..]));
        // The server closed that connection: the next request goes on a new one.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let a = c.send("GET", "/again", &[], None).await.unwrap();
        assert_eq!(a.status, 200);
        let a = c.send("GET", "/and-again", &[], None).await.unwrap();
        assert_eq!(a.status, 200);
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 2);
    }
}
