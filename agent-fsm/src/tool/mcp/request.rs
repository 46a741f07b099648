//! A request to the server that is cancelled there if its caller stops
//! waiting: what a tool call and a page of the list read leniently are
//! sent with.

use rmcp::ServiceError;
use rmcp::model::{CancelledNotificationParam, ClientRequest, RequestId, ServerResult};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient};

/// Sends `request` and waits for its answer; if dropped first (a timeout),
/// tells the server the request was abandoned, which `Peer::send_request`
/// does not: the server would go on with it, and the SDK would keep
/// waiting for its answer.
pub(super) async fn send_cancel_on_drop(
    peer: &Peer<RoleClient>,
    request: ClientRequest,
) -> Result<ServerResult, ServiceError> {
    let handle = peer.send_request_with_option(request, PeerRequestOptions::no_options()).await?;
    let mut guard = CancelOnDrop { peer: peer.clone(), id: Some(handle.id.clone()) };
    let answer = handle.await_response().await;
    guard.id = None;
    answer
}

/// Tells the server a request was abandoned (`notifications/cancelled`)
/// if dropped while `id` is set: the call was dropped before its answer.
struct CancelOnDrop {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let peer = self.peer.clone();
        let cancelled = CancelledNotificationParam::new(Some(id), Some("the call was dropped".to_owned()));
        runtime.spawn(async move {
            if let Err(error) = peer.notify_cancelled(cancelled).await {
                tracing::debug!(%error, "cannot tell the MCP server a call was cancelled");
            }
        });
    }
}
