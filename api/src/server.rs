//! The HTTP server loop: accepts TCP connections and serves the application over HTTP/1.1
//! (and h2c) with hyper, under the limits a server facing the internet needs. poem's own
//! loop has none of them: no header, body or idle timeout, no connection cap, and an accept
//! loop that retries a failing `accept` at once (a core at 100 % once file descriptors run
//! out). Here:
//! - **headers** must arrive within `header_read_timeout` (hyper's timer; slowloris), and may
//!   not exceed `max_header_bytes` (431);
//! - **idle** keep-alive connections close after `keep_alive_timeout` without traffic while no
//!   request is in flight (a slow handler is not idle; a stalled response write is);
//! - **bodies** are read by the middleware within `body_read_timeout` (408);
//! - at most `max_connections` are open: at the cap the loop waits for one to close before it
//!   accepts again (back-pressure: the kernel's backlog holds the rest), never spinning;
//! - `accept` errors that mean "out of resources" (EMFILE, ENFILE, ENOBUFS, ENOMEM) back off
//!   exponentially (10 ms up to 1 s); errors of one aborted connection are skipped.
use crate::config::ServerConfig;
use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use poem::web::{LocalAddr, RemoteAddr};
use poem::{Endpoint, EndpointExt};
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};
use tokio::time::Instant;

/// The connection limits (see the module documentation).
#[derive(Debug, Clone)]
pub struct Limits {
    pub header_read_timeout: Duration,
    pub keep_alive_timeout: Duration,
    pub max_connections: usize,
    pub max_header_bytes: usize,
}

impl Limits {
    pub fn from_config(c: &ServerConfig) -> Self {
        Self {
            header_read_timeout: Duration::from_millis(c.header_read_timeout_ms),
            keep_alive_timeout: Duration::from_millis(c.keep_alive_timeout_ms),
            max_connections: c.max_connections.max(1),
            // hyper's smallest buffer is 8 KiB.
            max_header_bytes: c.max_header_bytes.max(8192),
        }
    }

    /// Lowers `max_connections` to what the process's file descriptor limit allows (keeping
    /// some for the store, logs and mail), so the cap, not EMFILE, is what stops accepting.
    pub fn fit_to_fd_limit(mut self, fd_limit: Option<u64>) -> Self {
        if let Some(limit) = fd_limit {
            let usable = limit.saturating_sub(FD_RESERVE).max(16) as usize;
            if usable < self.max_connections {
                tracing::warn!(
                    configured = self.max_connections,
                    fd_limit = limit,
                    max_connections = usable,
                    "server.max_connections lowered to fit the open-files limit (raise `ulimit -n`)"
                );
                self.max_connections = usable;
            }
        }
        self
    }
}

/// File descriptors kept for everything that is not a client connection.
const FD_RESERVE: u64 = 128;

/// Raises the soft open-files limit to the hard one (a process may always do so) and returns
/// the limit now in force.
pub fn raise_fd_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        match rlimit::increase_nofile_limit(u64::MAX) {
            Ok(n) => Some(n),
            Err(e) => {
                tracing::warn!(error = %e, "cannot raise the open-files limit");
                rlimit::getrlimit(rlimit::Resource::NOFILE)
                    .ok()
                    .map(|(soft, _)| soft)
            }
        }
    }
    #[cfg(not(unix))]
    {
        None
    }
}

type ResponseBody = BoxBody<Bytes, io::Error>;

/// Serves `ep` on `listener` until `shutdown` resolves; then stops accepting, lets open
/// connections finish their requests (up to `grace`), and returns.
pub async fn serve<E>(
    listener: TcpListener,
    ep: E,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
) -> io::Result<()>
where
    E: Endpoint + 'static,
{
    let ep = Arc::new(ep.map_to_response().boxed());
    let local = listener.local_addr()?;
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut backoff = Duration::ZERO;
    let mut last_warning: Option<Instant> = None;
    tokio::pin!(shutdown);
    loop {
        // Back-pressure: at the cap, wait here (not in a loop) until a connection closes.
        let permit = tokio::select! {
            _ = &mut shutdown => break,
            p = permits.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
        };
        let accepted = tokio::select! {
            _ = &mut shutdown => break,
            r = listener.accept() => r,
        };
        let (stream, peer) = match accepted {
            Ok(x) => {
                backoff = Duration::ZERO;
                x
            }
            // That one connection is gone; the next may be fine.
            Err(e) if is_connection_error(&e) => continue,
            Err(e) => {
                backoff = (backoff * 2).clamp(Duration::from_millis(10), Duration::from_secs(1));
                if last_warning.is_none_or(|t| t.elapsed() >= Duration::from_secs(1)) {
                    tracing::warn!(error = %e, backoff_ms = backoff.as_millis() as u64, "accept failed; backing off");
                    last_warning = Some(Instant::now());
                }
                drop(permit);
                tokio::select! {
                    _ = &mut shutdown => break,
                    _ = tokio::time::sleep(backoff) => continue,
                }
            }
        };
        let _ = stream.set_nodelay(true);
        tokio::spawn(connection(
            stream,
            local,
            peer,
            ep.clone(),
            limits.clone(),
            stop_rx.clone(),
            permit,
        ));
    }
    drop(listener);
    let _ = stop_tx.send(true);
    // Every connection holds a permit until it ends: all permits back means all are closed.
    let all = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
    if tokio::time::timeout(grace, permits.acquire_many(all))
        .await
        .is_err()
    {
        tracing::warn!("connections still open after the grace period; closing them");
    }
    Ok(())
}

fn is_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
            | io::ErrorKind::WouldBlock
    )
}

async fn connection(
    stream: TcpStream,
    local: SocketAddr,
    peer: SocketAddr,
    ep: Arc<poem::endpoint::BoxEndpoint<'static>>,
    limits: Limits,
    mut stop: watch::Receiver<bool>,
    _permit: tokio::sync::OwnedSemaphorePermit,
) {
    let activity = Arc::new(Activity::new());
    let io = TokioIo::new(Watched {
        inner: stream,
        activity: activity.clone(),
    });
    let service = {
        let activity = activity.clone();
        service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
            let ep = ep.clone();
            let busy = activity.begin();
            async move {
                let req = poem::Request::from((
                    req,
                    LocalAddr(poem::Addr::SocketAddr(local)),
                    RemoteAddr(poem::Addr::SocketAddr(peer)),
                    poem::http::uri::Scheme::HTTP,
                ));
                let resp = ep.get_response(req).await;
                drop(busy);
                Ok::<_, std::convert::Infallible>(hyper::Response::<ResponseBody>::from(resp))
            }
        })
    };
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_buf_size(limits.max_header_bytes);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_header_list_size(u32::try_from(limits.max_header_bytes).unwrap_or(u32::MAX));
    let conn = builder.serve_connection(io, service);
    tokio::pin!(conn);
    let mut stopping = false;
    loop {
        tokio::select! {
            r = conn.as_mut() => {
                if let Err(e) = r {
                    tracing::debug!(peer = %peer, error = %e, "connection ended with an error");
                }
                return;
            }
            _ = activity.idle(limits.keep_alive_timeout) => {
                tracing::debug!(peer = %peer, "closing an idle connection");
                return;
            }
            r = stop.changed(), if !stopping => {
                stopping = true;
                if r.is_ok() {
                    // Finish the request in flight, then close.
                    conn.as_mut().graceful_shutdown();
                }
            }
        }
    }
}

/// Requests this process is handling now, over all its connections (see
/// [`requests_in_flight`]).
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

/// How many requests this process is handling now: how busy it is, for background work that
/// yields to requests (webhook deliveries).
pub fn requests_in_flight() -> usize {
    IN_FLIGHT.load(Ordering::Relaxed)
}

/// When a connection last moved bytes, and how many of its requests are being handled.
struct Activity {
    start: Instant,
    last_ms: AtomicU64,
    in_flight: AtomicUsize,
}

impl Activity {
    fn new() -> Self {
        Self {
            start: Instant::now(),
            last_ms: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
        }
    }

    fn touch(&self) {
        let ms = self.start.elapsed().as_millis() as u64;
        self.last_ms.store(ms, Ordering::Relaxed);
    }

    fn begin(self: &Arc<Self>) -> Busy {
        IN_FLIGHT.fetch_add(1, Ordering::Relaxed);
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        Busy(self.clone())
    }

    /// Resolves once the connection has moved no bytes for `timeout` while no request was in
    /// flight.
    async fn idle(&self, timeout: Duration) {
        loop {
            let last = self.start + Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
            let deadline = last + timeout;
            if self.in_flight.load(Ordering::Relaxed) > 0 {
                tokio::time::sleep(timeout).await;
            } else if Instant::now() >= deadline {
                return;
            } else {
                tokio::time::sleep_until(deadline).await;
            }
        }
    }
}

/// A request being handled; the connection is not idle meanwhile.
struct Busy(Arc<Activity>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.touch();
        IN_FLIGHT.fetch_sub(1, Ordering::Relaxed);
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The socket, noting each read and write in the connection's [`Activity`].
struct Watched {
    inner: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.touch();
        }
        r
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
