//! A serde `Deserializer` over JSON values that accepts what real clients send.
//!
//! Form-encoded and GET parameters arrive as text, so an int parameter may be
//! `"123"`, an array `"[1, 2]"` (JSON text), a bool `"true"`; JSON bodies may
//! send a string parameter as a number. Any `#[derive(Deserialize)]` struct
//! read through [`from_value`] accepts all of these, and a failure names the
//! parameter by its path (`user.login`, `codes[1]`).

use std::fmt;

use serde::de::{
    self, DeserializeOwned, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor,
};
use serde_json::{Map, Number, Value};

/// A parameter that could not be read: where, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParamError {
    path: Vec<String>,
    message: String,
}

impl ParamError {
    fn at(message: impl Into<String>) -> Self {
        Self {
            path: Vec::new(),
            message: message.into(),
        }
    }

    fn within(mut self, segment: String) -> Self {
        self.path.insert(0, segment);
        self
    }

    /// The failing parameter, as the caller wrote it (`user.login`, `codes[1]`).
    pub(crate) fn parameter(&self) -> String {
        let mut out = String::new();
        for segment in &self.path {
            if !segment.starts_with('[') && !out.is_empty() {
                out.push('.');
            }
            out.push_str(segment);
        }
        out
    }

    /// What is wrong with it.
    pub(crate) fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.parameter(), self.message)
    }
}

impl std::error::Error for ParamError {}

impl de::Error for ParamError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Self::at(msg.to_string())
    }

    fn missing_field(field: &'static str) -> Self {
        Self::at("is required").within(field.to_owned())
    }

    fn invalid_type(unexpected: de::Unexpected<'_>, expected: &dyn de::Expected) -> Self {
        Self::at(format!("must be {expected}, got {unexpected}"))
    }

    fn invalid_value(unexpected: de::Unexpected<'_>, expected: &dyn de::Expected) -> Self {
        Self::at(format!("must be {expected}, got {unexpected}"))
    }

    fn unknown_variant(variant: &str, expected: &'static [&'static str]) -> Self {
        Self::at(format!("{variant:?} is not one of {}", expected.join(", ")))
    }
}

/// Reads parameters into `T`, leniently.
pub(crate) fn from_value<T: DeserializeOwned>(value: Value) -> Result<T, ParamError> {
    T::deserialize(Lenient(value))
}

struct Lenient(Value);

fn unexpected(value: &Value) -> de::Unexpected<'_> {
    match value {
        Value::Null => de::Unexpected::Unit,
        Value::Bool(b) => de::Unexpected::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => de::Unexpected::Signed(i),
            (_, Some(u), _) => de::Unexpected::Unsigned(u),
            (_, _, Some(f)) => de::Unexpected::Float(f),
            _ => de::Unexpected::Other("number"),
        },
        Value::String(s) => de::Unexpected::Str(s),
        Value::Array(_) => de::Unexpected::Seq,
        Value::Object(_) => de::Unexpected::Map,
    }
}

impl Lenient {
    fn mismatch(&self, expected: &dyn de::Expected) -> ParamError {
        de::Error::invalid_type(unexpected(&self.0), expected)
    }

    /// An integer from a number or numeric text.
    fn integer<'de, V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ParamError> {
        let number = match &self.0 {
            Value::Number(n) => n.clone(),
            Value::String(s) => {
                let s = s.trim();
                match s.parse::<i64>() {
                    Ok(i) => Number::from(i),
                    Err(_) => match s.parse::<u64>() {
                        Ok(u) => Number::from(u),
                        Err(_) => {
                            return Err(ParamError::at(format!("must be an integer, got {s:?}")));
                        }
                    },
                }
            }
            _ => return Err(self.mismatch(&visitor)),
        };
        if let Some(i) = number.as_i64() {
            visitor.visit_i64(i)
        } else if let Some(u) = number.as_u64() {
            visitor.visit_u64(u)
        } else {
            Err(ParamError::at(format!("must be an integer, got {number}")))
        }
    }

    /// JSON text inside a string, for array and object parameters of forms and GET.
    fn structured(self) -> Result<Value, ParamError> {
        match self.0 {
            Value::String(text) => serde_json::from_str(&text)
                .map_err(|e| ParamError::at(format!("is not valid JSON text: {e}"))),
            other => Ok(other),
        }
    }
}

impl<'de> de::Deserializer<'de> for Lenient {
    type Error = ParamError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ParamError> {
        match self.0 {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(b),
            Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    visitor.visit_i64(i)
                } else if let Some(u) = n.as_u64() {
                    visitor.visit_u64(u)
                } else {
                    visitor.visit_f64(n.as_f64().unwrap_or(f64::NAN))
                }
            }
            Value::String(s) => visitor.visit_string(s),
            Value::Array(items) => visitor.visit_seq(Seq {
                items: items.into_iter(),
                index: 0,
            }),
            Value::Object(map) => visitor.visit_map(Fields {
                entries: map.into_iter(),
                key: None,
                value: None,
            }),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ParamError> {
        match &self.0 {
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::String(s) => match s.trim() {
                "true" | "1" => visitor.visit_bool(true),
                "false" | "0" => visitor.visit_bool(false),
                other => Err(ParamError::at(format!("must be a boolean, got {other:?}"))),
            },
            Value::Number(n) => match n.as_i64() {
                Some(1) => visitor.visit_bool(true),
                Some(0) => visitor.visit_bool(false),
                _ => Err(self.mismatch(&visitor)),
            },
            _ => Err(self.mismatch(&visitor)),
        }
    }

    fn deserialize_i8<V: Visitor<'de>>(self, v: V) -> Result<V::Value, ParamError> {
        self.integer(v)
    }
    fn deserialize_i16<V: Visitor<'de>>(self, v: V) -> Result<V::Value, ParamError> {
        self.integer(v)
    }
    fn deserialize_i32<V: Visitor<'de>>(self, v: V) -> Result<V::Value, ParamError> {
        self.integer(v)
    }
    fn deserialize_i64<V: Visitor<'de>>(self, v: V) -> Result<V::Value, ParamError> {
        self.integer(v)
    }
    fn deserialize_u8<V: Visitor<'de>>(self, v: V) -> Result<V::Value, ParamError> {
        self.integer(v)
    }
    fn deserialize_u16<V: Visitor<'de>>(self, v: V) -> Result<V::Value, ParamError> {
        self.integer(v)
    }
    fn deserialize_u32<V: Visitor<'de>>(self, v: V) -> Result<V::Value, ParamError> {
        self.integer(v)
    }
    fn deserialize_u64<V: Visitor<'de>>(self, v: V) -> Result<V::Value, ParamError> {
        self.integer(v)
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ParamError> {
        self.deserialize_f64(visitor)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ParamError> {
        let number = match &self.0 {
            Value::Number(n) => n.as_f64(),
            Value::String(s) => s.trim().parse::<f64>().ok().filter(|f| f.is_finite()),
            _ => return Err(self.mismatch(&visitor)),
        };
        match number {
            Some(f) => visitor.visit_f64(f),
            None => Err(ParamError::at(format!("must be a number, got {}", self.0))),
        }
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ParamError> {
        self.deserialize_string(visitor)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ParamError> {
        self.deserialize_string(visitor)
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ParamError> {
        match self.0 {
            Value::String(s) => visitor.visit_string(s),
            Value::Number(n) => visitor.visit_string(n.to_string()),
            other => Err(Lenient(other).mismatch(&visitor)),
        }
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ParamError> {
        self.deserialize_string(visitor)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ParamError> {
        self.deserialize_string(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ParamError> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            other => visitor.visit_some(Lenient(other)),
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ParamError> {
        match self.0 {
            Value::Null => visitor.visit_unit(),
            other => Err(Lenient(other).mismatch(&visitor)),
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, ParamError> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, ParamError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ParamError> {
        match self.structured()? {
            Value::Array(items) => visitor.visit_seq(Seq {
                items: items.into_iter(),
                index: 0,
            }),
            other => Err(Lenient(other).mismatch(&visitor)),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, ParamError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, ParamError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ParamError> {
        match self.structured()? {
            Value::Object(map) => visitor.visit_map(Fields {
                entries: map.into_iter(),
                key: None,
                value: None,
            }),
            other => Err(Lenient(other).mismatch(&visitor)),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ParamError> {
        self.deserialize_map(visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ParamError> {
        match self.0 {
            Value::String(s) => visitor.visit_enum(s.into_deserializer()),
            Value::Object(map) => visitor.visit_enum(Fields {
                entries: map.into_iter(),
                key: None,
                value: None,
            }),
            other => Err(Lenient(other).mismatch(&visitor)),
        }
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ParamError> {
        self.deserialize_string(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ParamError> {
        visitor.visit_unit()
    }
}

struct Seq {
    items: std::vec::IntoIter<Value>,
    index: usize,
}

impl<'de> SeqAccess<'de> for Seq {
    type Error = ParamError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, ParamError> {
        let Some(item) = self.items.next() else {
            return Ok(None);
        };
        let index = self.index;
        self.index += 1;
        seed.deserialize(Lenient(item))
            .map(Some)
            .map_err(|e| e.within(format!("[{index}]")))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

struct Fields {
    entries: serde_json::map::IntoIter,
    key: Option<String>,
    value: Option<Value>,
}

impl<'de> MapAccess<'de> for Fields {
    type Error = ParamError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, ParamError> {
        let Some((key, value)) = self.entries.next() else {
            return Ok(None);
        };
        self.value = Some(value);
        self.key = Some(key.clone());
        seed.deserialize(Lenient(Value::String(key))).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, ParamError> {
        let value = self.value.take().unwrap_or(Value::Null);
        let key = self.key.take().unwrap_or_default();
        seed.deserialize(Lenient(value)).map_err(|e| e.within(key))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

impl<'de> de::EnumAccess<'de> for Fields {
    type Error = ParamError;
    type Variant = Lenient;

    fn variant_seed<V: DeserializeSeed<'de>>(
        mut self,
        seed: V,
    ) -> Result<(V::Value, Lenient), ParamError> {
        let (key, value) = self
            .entries
            .next()
            .ok_or_else(|| ParamError::at("must name one variant"))?;
        let variant = seed.deserialize(Lenient(Value::String(key)))?;
        Ok((variant, Lenient(value)))
    }
}

impl<'de> de::VariantAccess<'de> for Lenient {
    type Error = ParamError;

    fn unit_variant(self) -> Result<(), ParamError> {
        Ok(())
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<T::Value, ParamError> {
        seed.deserialize(self)
    }

    fn tuple_variant<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, ParamError> {
        de::Deserializer::deserialize_seq(self, visitor)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ParamError> {
        de::Deserializer::deserialize_map(self, visitor)
    }
}

/// Wraps a parameter map for [`from_value`].
pub(crate) fn object(map: Map<String, Value>) -> Value {
    Value::Object(map)
}

#[cfg(test)]
mod tests;
