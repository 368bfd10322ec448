//! String enums as the OLM v0 API writes them.
//!
//! Upstream declares these as Go string types with a list of known constants, and its CRDs accept
//! any string for them (no `enum` in the schema). An object written by another client, or by a
//! newer OLM, may carry a value this crate does not know, and reading such an object must not
//! fail: every enum here has an `Other` variant that keeps the text as given and writes it back
//! unchanged.

/// Defines a string enum with known values and an `Other(String)` catch-all, serialized as the
/// bare string and described in the CRD as `type: string`.
macro_rules! open_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
            /// A value this crate does not know, kept as given.
            Other(String),
        }

        impl $name {
            /// Every value this crate knows, in declaration order (not [`Self::Other`]).
            pub const KNOWN: &'static [$name] = &[$( $name::$variant, )+];

            /// The value as written in the object.
            pub fn as_str(&self) -> &str {
                match self {
                    $( $name::$variant => $text, )+
                    $name::Other(s) => s,
                }
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> $name {
                match s {
                    $( $text => $name::$variant, )+
                    other => $name::Other(other.to_owned()),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
                ser.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<$name, D::Error> {
                let s = <std::borrow::Cow<'de, str>>::deserialize(de)?;
                Ok($name::from(s.as_ref()))
            }
        }

        #[cfg(feature = "schema")]
        impl schemars::JsonSchema for $name {
            fn inline_schema() -> bool {
                true
            }

            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({"type": "string"})
            }
        }
    };
}

pub(crate) use open_enum;

#[cfg(test)]
mod tests {
    open_enum! {
        /// A test enum.
        pub enum Colour {
            /// Red.
            Red = "red",
            /// Green.
            Green = "green",
        }
    }

    #[test]
    fn known_and_unknown_values_round_trip() {
        let read: Vec<Colour> = serde_json::from_str(r#"["red","green","blue",""]"#).unwrap();
        assert_eq!(
            read,
            [
                Colour::Red,
                Colour::Green,
                Colour::Other("blue".into()),
                Colour::Other(String::new())
            ]
        );
        assert_eq!(
            serde_json::to_string(&read).unwrap(),
            r#"["red","green","blue",""]"#
        );
    }

    #[test]
    fn known_lists_every_value_but_other() {
        assert_eq!(Colour::KNOWN, [Colour::Red, Colour::Green]);
    }

    #[test]
    fn a_non_string_is_an_error() {
        assert!(serde_json::from_str::<Colour>("1").is_err());
    }
}
