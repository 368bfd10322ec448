//! `/metrics` for clients the API server vouches for, as controller-runtime's
//! `filters.WithAuthenticationAndAuthorization` (which upstream's catalogd and
//! operator-controller serve their metrics with): the bearer token is checked with a
//! TokenReview, and its user may read only if a SubjectAccessReview allows the verb (the request
//! method, lower-cased) on the non-resource URL (the path). Prometheus scrapes with a
//! ServiceAccount bound to a ClusterRole granting `get` on the `/metrics` nonResourceURL.
//!
//! Answers are cached as upstream caches them (authentication 1 minute, an allowed request 5
//! minutes, a denied one 30 seconds), so a scrape costs the API server nothing most of the time.
//! The cache holds at most [`CACHE_ENTRIES`] tokens; beyond that the oldest are dropped.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use tracing::warn;

/// controller-runtime's cache lifetimes.
pub const AUTHN_TTL: Duration = Duration::from_secs(60);
/// See [`AUTHN_TTL`].
pub const ALLOW_TTL: Duration = Duration::from_secs(5 * 60);
/// See [`AUTHN_TTL`].
pub const DENY_TTL: Duration = Duration::from_secs(30);
/// Most tokens remembered at once.
pub const CACHE_ENTRIES: usize = 1024;

/// What the API server said of a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Authenticated and allowed.
    Allow,
    /// No token, or one the API server does not accept.
    Unauthenticated,
    /// Authenticated as this user, and not allowed.
    Forbidden(String),
}

impl Verdict {
    /// The HTTP answer, in Go's `http.Error` form and controller-runtime's words.
    pub fn refusal(&self) -> Option<(http::StatusCode, String)> {
        match self {
            Verdict::Allow => None,
            Verdict::Unauthenticated => {
                Some((http::StatusCode::UNAUTHORIZED, "Unauthorized\n".to_owned()))
            }
            Verdict::Forbidden(user) => Some((
                http::StatusCode::FORBIDDEN,
                format!("Authorization denied for user {user}\n"),
            )),
        }
    }

    /// How long the verdict may be reused.
    fn ttl(&self) -> Duration {
        match self {
            Verdict::Allow => ALLOW_TTL,
            Verdict::Unauthenticated => AUTHN_TTL,
            Verdict::Forbidden(_) => DENY_TTL,
        }
    }
}

/// The token of an `Authorization: Bearer …` header.
pub fn bearer(header: Option<&str>) -> Option<&str> {
    let value = header?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// A request as reviewed: token, verb, path.
type Asked = (String, String, String);

/// Reviews against the API server, with the cache.
pub struct Auth {
    client: kube::Client,
    cache: Mutex<HashMap<Asked, (Verdict, Instant)>>,
}

impl Auth {
    /// Reviews with `client` (the process's own identity: it needs `create` on tokenreviews
    /// and subjectaccessreviews).
    pub fn new(client: kube::Client) -> Arc<Auth> {
        Arc::new(Auth {
            client,
            cache: Mutex::new(HashMap::new()),
        })
    }

    async fn verdict(&self, token: &str, verb: &str, path: &str) -> Result<Verdict, kube::Error> {
        let key = (token.to_owned(), verb.to_owned(), path.to_owned());
        let now = Instant::now();
        if let Ok(cache) = self.cache.lock()
            && let Some((v, until)) = cache.get(&key)
            && *until > now
        {
            return Ok(v.clone());
        }
        let verdict = self.review(token, verb, path).await?;
        if let Ok(mut cache) = self.cache.lock() {
            if cache.len() >= CACHE_ENTRIES {
                cache.retain(|_, (_, until)| *until > now);
            }
            if cache.len() < CACHE_ENTRIES {
                cache.insert(key, (verdict.clone(), now + verdict.ttl()));
            }
        }
        Ok(verdict)
    }

    async fn review(&self, token: &str, verb: &str, path: &str) -> Result<Verdict, kube::Error> {
        let reviews: Api<TokenReview> = Api::all(self.client.clone());
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: token.to_owned(),
                ..TokenReviewSpec::default()
            },
            ..TokenReview::default()
        };
        let status = reviews
            .create(&PostParams::default(), &review)
            .await?
            .status
            .unwrap_or_default();
        let Some(user) = status.user.filter(|_| status.authenticated == Some(true)) else {
            return Ok(Verdict::Unauthenticated);
        };
        let name = user.username.clone().unwrap_or_default();
        let access: Api<SubjectAccessReview> = Api::all(self.client.clone());
        let sar = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: user.username,
                groups: user.groups,
                uid: user.uid,
                extra: user.extra,
                non_resource_attributes: Some(NonResourceAttributes {
                    path: Some(path.to_owned()),
                    verb: Some(verb.to_owned()),
                }),
                ..SubjectAccessReviewSpec::default()
            },
            ..SubjectAccessReview::default()
        };
        let allowed = access
            .create(&PostParams::default(), &sar)
            .await?
            .status
            .is_some_and(|s| s.allowed);
        Ok(if allowed {
            Verdict::Allow
        } else {
            Verdict::Forbidden(name)
        })
    }
}

/// The axum middleware: lets a request through only when the API server allows it. A review
/// that fails (API server unreachable) answers 500, as upstream's filter does.
pub async fn require(State(auth): State<Arc<Auth>>, request: Request, next: Next) -> Response {
    let header = request
        .headers()
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let Some(token) = bearer(header).map(str::to_owned) else {
        return refuse(&Verdict::Unauthenticated);
    };
    let verb = request.method().as_str().to_lowercase();
    let path = request.uri().path().to_owned();
    match auth.verdict(&token, &verb, &path).await {
        Ok(Verdict::Allow) => next.run(request).await,
        Ok(v) => refuse(&v),
        Err(e) => {
            warn!(error = %e, path, "metrics: reviewing a request with the API server failed");
            (
                http::StatusCode::INTERNAL_SERVER_ERROR,
                plain(),
                "Authentication or authorization failed\n",
            )
                .into_response()
        }
    }
}

fn refuse(v: &Verdict) -> Response {
    match v.refusal() {
        Some((status, text)) => (status, plain(), text).into_response(),
        None => http::StatusCode::OK.into_response(),
    }
}

fn plain() -> [(http::HeaderName, &'static str); 2] {
    [
        (http::header::CONTENT_TYPE, "text/plain; charset=utf-8"),
        (
            http::header::HeaderName::from_static("x-content-type-options"),
            "nosniff",
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens() {
        assert_eq!(bearer(Some("Bearer abc")), Some("abc"));
        assert_eq!(bearer(Some("bearer  abc ")), Some("abc"));
        assert_eq!(bearer(Some("Basic abc")), None);
        assert_eq!(bearer(Some("Bearer ")), None);
        assert_eq!(bearer(None), None);
    }

    /// controller-runtime's pkg/metrics/filters: 401 "Unauthorized", 403 "Authorization denied
    /// for user <name>", each as Go's http.Error writes it.
    #[test]
    fn refusals_in_upstreams_words() {
        assert_eq!(Verdict::Allow.refusal(), None);
        assert_eq!(
            Verdict::Unauthenticated.refusal(),
            Some((http::StatusCode::UNAUTHORIZED, "Unauthorized\n".into()))
        );
        assert_eq!(
            Verdict::Forbidden("system:serviceaccount:ns:sa".into()).refusal(),
            Some((
                http::StatusCode::FORBIDDEN,
                "Authorization denied for user system:serviceaccount:ns:sa\n".into()
            ))
        );
        assert_eq!(Verdict::Forbidden(String::new()).ttl(), DENY_TTL);
    }
}
