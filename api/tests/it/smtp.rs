//! The SMTP transport against a real SMTP server process on loopback (aiosmtpd, installed by
//! `.ci/run`), and a dead SMTP server never making a request hang or fail.

use crate::common::*;
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

struct SmtpServer {
    child: Child,
    port: u16,
    lines: mpsc::Receiver<String>,
}

impl Drop for SmtpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start_smtp() -> SmtpServer {
    let port = free_port();
    // `.ci/test` installs aiosmtpd into a virtual environment and names its Python here.
    let python = std::env::var("TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let mut child = Command::new(python)
        .args([
            "-m",
            "aiosmtpd",
            "-n",
            "-l",
            &format!("127.0.0.1:{port}"),
            "-c",
            "aiosmtpd.handlers.Debugging",
        ])
        .env("PYTHONUNBUFFERED", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("python3 with aiosmtpd (bash .ci/test installs it in a virtual environment)");
    let out = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "aiosmtpd did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    SmtpServer {
        child,
        port,
        lines: rx,
    }
}

impl SmtpServer {
    /// Everything the server printed until a line containing `needle` (or a timeout).
    fn wait_for(&self, needle: &str) -> String {
        let mut seen = String::new();
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(line) = self.lines.recv_timeout(Duration::from_millis(200)) {
                seen.push_str(&line);
                seen.push('\n');
                if line.contains(needle) {
                    return seen;
                }
            }
        }
        panic!("SMTP server never received {needle:?}; it printed:\n{seen}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_mail_is_delivered_over_smtp() {
    let smtp = start_smtp();
    let h = harness_with(|c| {
        c.mail.transport = gatehouse_api::config::MailTransport::Smtp;
        c.mail.from = "Acme Auth <auth@acme.example>".into();
        c.mail.app_name = "Acme".into();
        c.mail.smtp.host = "127.0.0.1".into();
        c.mail.smtp.port = smtp.port;
        c.mail.smtp.security = gatehouse_api::config::SmtpSecurity::None;
    })
    .await;
    h.sign_up("smtp-user@example.com", "first-password-1").await;
    h.post(
        "/api/auth/forget-password",
        json!({"email": "smtp-user@example.com", "redirectTo": "/reset"}),
        None,
    )
    .await
    .expect(200);
    let printed = smtp.wait_for("/api/auth/reset-password/");
    let printed = printed + smtp.wait_for("</html>").as_str();
    assert!(printed.contains("To: smtp-user@example.com"), "{printed}");
    assert!(
        printed.contains("From: \"Acme Auth\" <auth@acme.example>")
            || printed.contains("From: Acme Auth <auth@acme.example>"),
        "{printed}"
    );
    assert!(
        printed.contains("Subject: Reset your Acme password"),
        "{printed}"
    );
    assert!(printed.contains("multipart/alternative"), "{printed}");
    assert!(printed.contains("text/html"), "{printed}");
    // Nothing went to the outbox.
    assert!(outbox(&h).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_smtp_server_does_not_fail_or_hang_the_request() {
    let port = free_port(); // nothing listens there
    let h = harness_with(|c| {
        c.mail.transport = gatehouse_api::config::MailTransport::Smtp;
        c.mail.smtp.host = "127.0.0.1".into();
        c.mail.smtp.port = port;
        c.mail.smtp.security = gatehouse_api::config::SmtpSecurity::None;
        c.mail.smtp.retries = 1;
    })
    .await;
    h.sign_up("dead@example.com", "first-password-1").await;
    let r = tokio::time::timeout(
        Duration::from_secs(30),
        h.post(
            "/api/auth/forget-password",
            json!({"email": "dead@example.com"}),
            None,
        ),
    )
    .await
    .expect("the request must not wait for the SMTP server");
    r.expect(200);
}
