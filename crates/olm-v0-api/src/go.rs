//! How Go's JSON decoder reads what serde would reject.

use serde::{Deserialize, Deserializer};

/// `null` as the empty value: an optional list, map or flag written as `null` is accepted by the
/// API server (which drops the null) and by Go (which reads it as empty), so it is read as
/// empty here too.
pub(crate) fn nullable<'de, D, T>(de: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(de)?.unwrap_or_default())
}
