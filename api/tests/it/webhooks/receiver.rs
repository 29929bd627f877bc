//! A webhook receiver for the tests: a real HTTP server on a free loopback port that records
//! each request, answers as planned, notices one delivery sent twice at once, and verifies
//! signatures with the Standard Webhooks library.
use poem::{handler, web::Data, Body, EndpointExt, Response, Route};
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the receiver got: headers and body of each request.
#[derive(Clone, Debug)]
pub(crate) struct Got {
    pub headers: poem::http::HeaderMap,
    pub body: String,
}

/// How the receiver answers its next requests (then 200 for the rest).
#[derive(Clone, Debug)]
pub(crate) enum Plan {
    Status(u16),
    /// Answer after this long (longer than the sender waits: a timeout).
    Slow(Duration),
}

#[derive(Clone, Default)]
pub(crate) struct Log {
    pub got: Arc<Mutex<Vec<Got>>>,
    pub(crate) plan: Arc<Mutex<VecDeque<Plan>>>,
    /// How long each answer takes (so that overlapping sends would overlap here).
    pause: Arc<Mutex<Duration>>,
    /// `webhook-id`s being answered now, and those that came again while being answered.
    in_flight: Arc<Mutex<Vec<String>>>,
    pub overlaps: Arc<Mutex<Vec<String>>>,
}

/// A webhook receiver on a free loopback port.
pub(crate) struct Receiver {
    pub url: String,
    pub log: Log,
    _task: tokio::task::JoinHandle<()>,
}

#[handler]
async fn receive(req: &poem::Request, body: Body, Data(log): Data<&Log>) -> Response {
    let body = body.into_string().await.unwrap_or_default();
    let id = req
        .headers()
        .get("webhook-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    {
        let mut now = log.in_flight.lock().unwrap();
        if now.contains(&id) {
            log.overlaps.lock().unwrap().push(id.clone());
        }
        now.push(id.clone());
    }
    let pause = *log.pause.lock().unwrap();
    tokio::time::sleep(pause).await;
    log.in_flight.lock().unwrap().retain(|i| *i != id);
    log.got.lock().unwrap().push(Got {
        headers: req.headers().clone(),
        body,
    });
    let next = log.plan.lock().unwrap().pop_front();
    match next {
        Some(Plan::Status(s)) => Response::builder()
            .status(poem::http::StatusCode::from_u16(s).unwrap())
            // A redirect would bring a follower back here.
            .header("location", "/hook")
            .body("no"),
        Some(Plan::Slow(d)) => {
            tokio::time::sleep(d).await;
            Response::builder().body("late")
        }
        None => Response::builder().body("ok"),
    }
}

impl Receiver {
    pub(crate) async fn start(plan: Vec<Plan>) -> Self {
        let log = Log::default();
        log.plan.lock().unwrap().extend(plan);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = Route::new()
            .at("/hook", poem::post(receive))
            .data(log.clone());
        let task = tokio::spawn(async move {
            let acceptor = poem::listener::TcpAcceptor::from_tokio(listener).unwrap();
            let _ = poem::Server::new_with_acceptor(acceptor).run(app).await;
        });
        Self {
            url: format!("http://localhost:{}/hook", addr.port()),
            log,
            _task: task,
        }
    }

    /// Each answer takes `pause` from now on.
    pub(crate) fn pause(&self, pause: Duration) {
        *self.log.pause.lock().unwrap() = pause;
    }

    pub(crate) fn got(&self) -> Vec<Got> {
        self.log.got.lock().unwrap().clone()
    }

    /// Waits (up to 20 s) until `n` requests came.
    pub(crate) async fn wait_for(&self, n: usize) -> Vec<Got> {
        self.wait_for_within(n, Duration::from_secs(20)).await
    }

    pub(crate) async fn wait_for_within(&self, n: usize, within: Duration) -> Vec<Got> {
        for _ in 0..within.as_millis() / 50 {
            let got = self.got();
            if got.len() >= n {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the receiver got {} of {n} requests", self.got().len());
    }
}

/// The body of `g` verified as Standard Webhooks with `secret` (the library's own check).
pub(crate) fn verified(g: &Got, secret: &str) -> Value {
    let wh = standardwebhooks::Webhook::new(secret).unwrap();
    wh.verify(g.body.as_bytes(), &g.headers)
        .unwrap_or_else(|e| panic!("signature refused: {e:?} {:?}", g.headers));
    serde_json::from_str(&g.body).unwrap()
}
