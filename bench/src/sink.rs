//! A webhook receiver for `--webhook`: answers every request 204 at once (HTTP/1.1, kept
//! alive) and counts them, so that the server's deliveries of the run's events go somewhere.
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// A running sink: its URL and how many requests it answered.
pub(crate) struct Sink {
    pub(crate) url: String,
    pub(crate) received: Arc<AtomicU64>,
}

impl Sink {
    pub(crate) async fn start() -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://localhost:{}/hook", listener.local_addr()?.port());
        let received = Arc::new(AtomicU64::new(0));
        let count = received.clone();
        tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                let count = count.clone();
                tokio::spawn(async move {
                    let _ = serve(conn, &count).await;
                });
            }
        });
        Ok(Self { url, received })
    }

    pub(crate) fn received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }

    /// Waits until no request has come for `gap` (at most `most`): how many came in all, and
    /// how long after the call the last one came.
    pub(crate) async fn quiet(
        &self,
        gap: std::time::Duration,
        most: std::time::Duration,
    ) -> (u64, std::time::Duration) {
        let start = std::time::Instant::now();
        let (mut seen, mut last) = (self.received(), start);
        while last.elapsed() < gap && start.elapsed() < most {
            tokio::time::sleep(gap.min(std::time::Duration::from_millis(100))).await;
            let now = self.received();
            if now != seen {
                (seen, last) = (now, std::time::Instant::now());
            }
        }
        (seen, last - start)
    }
}

/// Answers one connection's requests until it closes.
async fn serve(conn: tokio::net::TcpStream, count: &AtomicU64) -> std::io::Result<()> {
    let (read, mut write) = conn.into_split();
    let mut read = BufReader::new(read);
    loop {
        let mut length = 0usize;
        let mut line = String::new();
        loop {
            line.clear();
            if read.read_line(&mut line).await? == 0 {
                return Ok(());
            }
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0; length.min(1 << 20)];
        read.read_exact(&mut body).await?;
        count.fetch_add(1, Ordering::Relaxed);
        write
            .write_all(b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n")
            .await?;
    }
}
