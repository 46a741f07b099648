//! An inspector that a fleet attaches an agent to per job, over real HTTP
//! on 127.0.0.1: past [`FINISHED_KEPT`] finished agents, those attached
//! first are forgotten (their pages and updates answer 404), so that the
//! inspector does not keep every log for as long as it runs; every agent
//! still running stays listed, and so do the latest that finished.

use std::time::Duration;

use agent_fsm::inspector::{AgentView, FINISHED_KEPT, Inspector};
use agent_fsm::runtime::{ExecutorConfig, MachineHandle, from_fn, spawn};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{sleep, timeout};

#[agent_fsm::state_machine(fallback = Nothing)]
mod job {
    #[states]
    #[derive(Debug, Clone)]
    pub(crate) enum State {
        #[initial]
        Queued,
        Done,
    }
    #[events]
    #[derive(Debug, Clone)]
    pub(crate) enum Event {
        Run,
    }
    #[actions]
    #[derive(Debug)]
    pub(crate) enum Action {
        Nothing,
    }
    transitions! {
        Queued + Run => Done / Nothing,
        Done + Run => Queued / Nothing,
    }
}

type Handle = MachineHandle<job::Machine, ()>;

const LIMIT: Duration = Duration::from_secs(30);

fn agent() -> Handle {
    spawn(job::Machine::new(), from_fn(|_, _| {}), ExecutorConfig::new())
}

/// One GET with the inspector's cookie: the status line and the body.
async fn get(inspector: &Inspector, path: &str) -> (String, String) {
    let addr = inspector.local_addr();
    let mut stream = timeout(LIMIT, TcpStream::connect(addr)).await.expect("connect in time").expect("connect");
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nCookie: {}\r\nConnection: close\r\n\r\n", inspector.cookie());
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut response = Vec::new();
    timeout(LIMIT, stream.read_to_end(&mut response)).await.expect("answer in time").expect("read");
    let response = String::from_utf8_lossy(&response).into_owned();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    (head.lines().next().unwrap_or_default().to_owned(), body.to_owned())
}

/// The index's list.
async fn listed(inspector: &Inspector) -> Vec<serde_json::Value> {
    let (status, body) = get(inspector, "/api/agents").await;
    assert!(status.contains("200"), "{status}");
    serde_json::from_str(&body).expect("a JSON list")
}

#[tokio::test]
async fn past_the_limit_the_first_finished_agents_are_forgotten() {
    let inspector = Inspector::bind("127.0.0.1:0").await.expect("bind");
    let running = agent();
    let first = inspector.attach(&running, AgentView::new("runs throughout")).await.expect("attach");
    // Jobs that ran and finished, more than the inspector keeps.
    let over = 5;
    let mut last = 0;
    for n in 0..FINISHED_KEPT + over {
        let handle = agent();
        last = inspector.attach(&handle, AgentView::new(format!("job {n}"))).await.expect("attach");
        handle.send(job::Event::Run).await.expect("run");
        handle.shutdown().await.expect("shutdown");
    }
    // Each is marked finished once its follower has seen its end.
    timeout(LIMIT, async {
        while listed(&inspector).await.iter().filter(|a| a["finished"] == true).count() < FINISHED_KEPT {
            sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the jobs shown finished");
    // The next attach forgets those past the limit, the first ones.
    let next = agent();
    let newest = inspector.attach(&next, AgentView::new("next")).await.expect("attach");
    let list = listed(&inspector).await;
    let finished: Vec<&serde_json::Value> = list.iter().filter(|a| a["finished"] == true).collect();
    assert_eq!(finished.len(), FINISHED_KEPT, "the finished agents kept");
    assert_eq!(finished.first().map(|a| a["name"].clone()), Some(format!("job {over}").into()), "the first forgotten");
    let ids: Vec<u64> = list.iter().filter_map(|a| a["id"].as_u64()).collect();
    for kept in [first, last, newest] {
        assert!(ids.contains(&(kept as u64)), "agent {kept} is listed");
        let (status, _) = get(&inspector, &format!("/agents/{kept}")).await;
        assert!(status.contains("200"), "{kept}: {status}");
    }
    for gone in first + 1..=first + over {
        assert!(!ids.contains(&(gone as u64)), "agent {gone} is forgotten");
        let (status, _) = get(&inspector, &format!("/agents/{gone}")).await;
        assert!(status.contains("404"), "{gone}: {status}");
        let (status, _) = get(&inspector, &format!("/api/agents/{gone}/events")).await;
        assert!(status.contains("404"), "{gone}'s updates: {status}");
    }
    inspector.shutdown().await;
    running.shutdown().await.expect("shutdown");
    next.shutdown().await.expect("shutdown");
}
