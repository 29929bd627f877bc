//! Two `gatehouse` processes on one store, and how the races talk to them.
use crate::common::Server;
use serde_json::{json, Value};
use storage::scylla::testing::{
    cluster_nodes_from_env, nodes_from_env, throwaway_keyspace_on, DropKeyspace,
};

pub(crate) const SERVER_KEY: &str = "processes-server-key-0123456789abcdef";
pub(crate) const ORIGIN: &str = "http://localhost:3000";

/// Two processes on one store, and what the store needs cleaned up.
pub(crate) struct Pair {
    pub(crate) a: Server,
    pub(crate) b: Server,
    pub(crate) http: reqwest::Client,
    pub(crate) dir: tempfile::TempDir,
    /// Both processes' environment (to start one again).
    pub(crate) env: Vec<(String, String)>,
    /// The keyspace both processes use (CQL backends), and its guard.
    pub(crate) keyspace: Option<(storage::scylla::ScyllaOptions, DropKeyspace)>,
}

#[derive(Clone, Copy)]
pub(crate) enum Backend {
    Sqlite,
    Scylla,
    /// The three-node cluster (`CQL_CLUSTER_URI`), the keyspace replicated on all three.
    Cluster,
}

/// Starts two processes on one store (`None`: the backend is not available here).
pub(crate) fn pair(backend: Backend, extra: &[(&str, &str)]) -> Option<Pair> {
    let dir = tempfile::tempdir().unwrap();
    let mut env: Vec<(String, String)> = vec![
        (
            "GATEHOUSE_SECRET".into(),
            "processes-secret-0123456789abcdefghij".into(),
        ),
        ("GATEHOUSE_SERVER_KEY".into(), SERVER_KEY.into()),
    ];
    env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let mut keyspace = None;
    let nodes = match backend {
        Backend::Sqlite => None,
        Backend::Scylla => Some((nodes_from_env()?, 1)),
        Backend::Cluster => Some((cluster_nodes_from_env()?, 3)),
    };
    if let Some((nodes, replicas)) = nodes {
        let (mut opts, guard) = throwaway_keyspace_on(nodes, "gh_proc");
        opts.replication =
            format!("{{'class': 'SimpleStrategy', 'replication_factor': {replicas}}}");
        // The schema is made once, by the migrate command, before any server starts.
        crate::common::migrate_cql(&mut env, &opts, dir.path());
        keyspace = Some((opts, guard));
    }
    let vars: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    Some(Pair {
        a: Server::start_with(dir.path(), &vars, None),
        b: Server::start_with(dir.path(), &vars, None),
        http: reqwest::Client::new(),
        dir,
        env,
        keyspace,
    })
}

pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) body: Value,
    pub(crate) cookie: Option<String>,
}

impl Reply {
    pub(crate) fn code(&self) -> &str {
        self.body["code"].as_str().unwrap_or_default()
    }
}

impl Pair {
    /// Kills process A (`kill -9`: no shutdown of any kind) and starts it again.
    pub(crate) fn kill_and_restart_a(&mut self) {
        self.a.child.kill().unwrap();
        self.a.child.wait().unwrap();
        let vars: Vec<(&str, &str)> = self
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        self.a = Server::start_with(self.dir.path(), &vars, None);
    }

    /// Process A for even `i`, B for odd.
    pub(crate) fn pick(&self, i: usize) -> &Server {
        if i.is_multiple_of(2) {
            &self.a
        } else {
            &self.b
        }
    }

    pub(crate) async fn call(
        &self,
        server: &Server,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
        cookie: Option<&str>,
        server_key: bool,
    ) -> Reply {
        let r = self
            .try_call(server, method, path, body, cookie, server_key)
            .await;
        assert!(r.status < 500, "{path}: {} {}", r.status, r.body);
        r
    }

    /// As `call`, any status.
    pub(crate) async fn try_call(
        &self,
        server: &Server,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
        cookie: Option<&str>,
        server_key: bool,
    ) -> Reply {
        let mut req = self
            .http
            .request(method, format!("{}{path}", server.base))
            .header("origin", ORIGIN);
        if let Some(b) = body {
            req = req.json(&b);
        }
        if let Some(c) = cookie {
            req = req.header("cookie", c);
        }
        if server_key {
            req = req.bearer_auth(SERVER_KEY);
        }
        let r = req.send().await.unwrap();
        let status = r.status().as_u16();
        let cookie = crate::common::session_cookie_of(r.headers());
        let text = r.text().await.unwrap();
        let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
        Reply {
            status,
            body,
            cookie,
        }
    }

    /// As `post`, any status.
    pub(crate) async fn try_post(
        &self,
        s: &Server,
        path: &str,
        body: Value,
        cookie: Option<&str>,
    ) -> Reply {
        self.try_call(s, reqwest::Method::POST, path, Some(body), cookie, false)
            .await
    }

    pub(crate) async fn post(
        &self,
        s: &Server,
        path: &str,
        body: Value,
        cookie: Option<&str>,
    ) -> Reply {
        self.call(s, reqwest::Method::POST, path, Some(body), cookie, false)
            .await
    }

    pub(crate) async fn get(&self, s: &Server, path: &str, cookie: &str) -> Reply {
        self.call(s, reqwest::Method::GET, path, None, Some(cookie), false)
            .await
    }

    /// Signs up on A; the session cookie and the user id.
    pub(crate) async fn user(&self, email: &str) -> (String, String) {
        let r = self
            .post(
                &self.a,
                "/sign-up/email",
                json!({"email": email, "password": "a-good-password", "name": "P"}),
                None,
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        (
            r.cookie.expect("a session cookie"),
            r.body["user"]["id"].as_str().unwrap().to_owned(),
        )
    }

    pub(crate) async fn new_org(&self, cookie: &str) -> String {
        let slug = format!("o-{}", storage::random_string(12).to_ascii_lowercase());
        let r = self
            .post(
                &self.a,
                "/organization/create",
                json!({"name": "Org", "slug": slug}),
                Some(cookie),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        r.body["id"].as_str().unwrap().to_owned()
    }

    pub(crate) async fn add_member(&self, s: &Server, org: &str, user: &str, role: &str) -> Reply {
        self.call(
            s,
            reqwest::Method::POST,
            "/organization/add-member",
            Some(json!({"userId": user, "role": role, "organizationId": org})),
            None,
            true,
        )
        .await
    }

    /// The members of `org`, as process `s` reads them.
    pub(crate) async fn members(&self, s: &Server, org: &str, cookie: &str) -> Value {
        let r = self
            .get(
                s,
                &format!("/organization/list-members?organizationId={org}&limit=1000"),
                cookie,
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        r.body
    }

    /// The token of the one reset mail for `email` not in `seen` (both processes share the
    /// outbox folder, and their clocks may tie), which joins `seen`.
    pub(crate) async fn reset_token(
        &self,
        email: &str,
        seen: &mut std::collections::HashSet<std::path::PathBuf>,
    ) -> String {
        let mail = self.new_mail("reset-password", email, seen).await;
        let link = mail["link"].as_str().unwrap().to_owned();
        let after = link.split("/reset-password/").nth(1).unwrap();
        after.split('?').next().unwrap().to_owned()
    }
}
