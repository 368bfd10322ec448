//! Why a pass of an OLM v0 controller did not finish: the one error type of every controller
//! (`olm_runtime::harness::Error`). Every controller, whether kube-runtime runs it, the work
//! queue ([`crate::queue::run`]) or the Operator worker, handles it with the harness's error
//! policy.

pub(crate) use olm_runtime::harness::Error;
