//! What people read of a failed Kubernetes request: the API server's own message.
//!
//! kube-rs formats an API error as `ApiError: <message>: <reason> (Status { status:
//! Some(Failure), code: 403, … })` — its Display carries the whole `Status` in Debug form. Go's
//! client prints only the server's message (`StatusError.Error()` is `ErrStatus.Message`), and
//! that is what upstream's statuses and tools show. Every status message and CLI error that
//! carries a request's failure goes through [`message`].

/// The API server's message for an API error (its reason, then its code, when the server sent
/// none); for any other failure (connection, TLS, decoding) the error's own words with their
/// causes, which carry no Debug form.
pub fn message(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) if !s.message.is_empty() => s.message.clone(),
        kube::Error::Api(s) if !s.reason.is_empty() => s.reason.clone(),
        kube::Error::Api(s) => format!("the API server answered with status {}", s.code),
        other => olm_k8s::chain(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;

    fn api(code: u16, reason: &str, message: &str) -> kube::Error {
        let mut s = Status::failure(message, reason);
        s.code = code;
        kube::Error::Api(s.boxed())
    }

    /// The words of a Forbidden answer as Go's client prints them (`StatusError.Error()`),
    /// where kube-rs's Display would add `ApiError: ` and the `Status { … }` Debug form.
    #[test]
    fn the_server_message_only() {
        let text = "clusterroles.rbac.authorization.k8s.io is forbidden: User \"u\" cannot create resource \"clusterroles\" in API group \"rbac.authorization.k8s.io\" at the cluster scope";
        let e = api(403, "Forbidden", text);
        assert!(e.to_string().contains("Status {"), "kube-rs's form: {e}");
        assert_eq!(message(&e), text);
        assert_eq!(message(&api(500, "InternalError", "")), "InternalError");
        assert_eq!(
            message(&api(504, "", "")),
            "the API server answered with status 504"
        );
    }
}
