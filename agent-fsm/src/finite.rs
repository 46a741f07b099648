//! JSON that reads back. JSON has no NaN or infinity, and `serde_json`
//! writes either as `null` without an error; `null` then does not read
//! back into a float. A snapshot, a step's event or an event sent to a
//! fleet agent written so would load nowhere, found only when the agent is
//! restored (after a crash, on another worker). What the crate writes to
//! be read back goes through [`to_string`], which refuses such a value
//! with an error naming where in it the float is.

use std::fmt;

use serde::ser::{self, Serialize};

/// `value` as JSON, or an error if it holds a float that is not finite.
///
/// Only a `null` in the text can be such a float, so a value written
/// without one is not looked at again; one with a `null` (an empty
/// `Option`, a unit, the word inside a string) is walked once more, which
/// writes nothing.
pub(crate) fn to_string<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    let text = serde_json::to_string(value)?;
    if text.contains("null") {
        check(value)?;
    }
    Ok(text)
}

/// An error if `value` holds a float that is not finite.
fn check<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<()> {
    match value.serialize(Walk) {
        Err(Found::NonFinite { value, mut at }) => {
            at.reverse();
            let at = if at.is_empty() { "the value itself".to_owned() } else { at.concat() };
            Err(ser::Error::custom(format!(
                "{value} at {at}: JSON has no NaN or infinity (serde_json would write null, which does not \
                 read back into a float); keep such a value in an Option, or write it as text"
            )))
        }
        // serde_json wrote the value: what else a walk refuses is its own
        // limit, not the value's.
        Ok(()) | Err(Found::Other) => Ok(()),
    }
}

/// Why the walk stopped: a float that is not finite, and the path to it,
/// innermost first (each level adds its own part as the error goes up, so
/// a value without one costs no path).
#[derive(Debug)]
enum Found {
    NonFinite { value: f64, at: Vec<String> },
    Other,
}

impl Found {
    fn within(mut self, part: impl FnOnce() -> String) -> Self {
        if let Self::NonFinite { at, .. } = &mut self {
            at.push(part());
        }
        self
    }

    /// This error, inside `variant` if the value is one.
    fn within_variant(self, variant: Option<&'static str>) -> Self {
        match variant {
            Some(variant) => self.within(field(variant)),
            None => self,
        }
    }
}

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NonFinite { value, .. } => write!(f, "{value}"),
            Self::Other => f.write_str("not walked"),
        }
    }
}

impl std::error::Error for Found {}

impl ser::Error for Found {
    fn custom<T: fmt::Display>(_: T) -> Self {
        Self::Other
    }
}

fn float(value: f64) -> Result<(), Found> {
    if value.is_finite() { Ok(()) } else { Err(Found::NonFinite { value, at: Vec::new() }) }
}

fn field(name: &str) -> impl FnOnce() -> String + '_ {
    move || format!(".{name}")
}

/// A serializer that writes nothing and looks at every float.
struct Walk;

/// The elements of a sequence or tuple, counted for the path, and the
/// enum variant they belong to.
struct Items {
    next: usize,
    variant: Option<&'static str>,
}

/// The fields of a struct or map, and the enum variant they belong to.
struct Fields(Option<&'static str>);

macro_rules! nothing {
    ($($method:ident($ty:ty)),* $(,)?) => {
        $(fn $method(self, _: $ty) -> Result<(), Found> { Ok(()) })*
    };
}

impl ser::Serializer for Walk {
    type Ok = ();
    type Error = Found;
    type SerializeSeq = Items;
    type SerializeTuple = Items;
    type SerializeTupleStruct = Items;
    type SerializeTupleVariant = Items;
    type SerializeMap = Fields;
    type SerializeStruct = Fields;
    type SerializeStructVariant = Fields;

    nothing!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_i128(i128),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_u128(u128),
        serialize_char(char),
        serialize_str(&str),
        serialize_bytes(&[u8]),
        serialize_unit_struct(&'static str),
    );

    fn serialize_f32(self, v: f32) -> Result<(), Found> {
        float(f64::from(v))
    }

    fn serialize_f64(self, v: f64) -> Result<(), Found> {
        float(v)
    }

    fn serialize_none(self) -> Result<(), Found> {
        Ok(())
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Found> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<(), Found> {
        Ok(())
    }

    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> Result<(), Found> {
        Ok(())
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, value: &T) -> Result<(), Found> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Found> {
        value.serialize(self).map_err(|e| e.within(field(variant)))
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Items, Found> {
        Ok(Items { next: 0, variant: None })
    }

    fn serialize_tuple(self, _: usize) -> Result<Items, Found> {
        Ok(Items { next: 0, variant: None })
    }

    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Items, Found> {
        Ok(Items { next: 0, variant: None })
    }

    fn serialize_tuple_variant(self, _: &'static str, _: u32, variant: &'static str, _: usize) -> Result<Items, Found> {
        Ok(Items { next: 0, variant: Some(variant) })
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Fields, Found> {
        Ok(Fields(None))
    }

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Fields, Found> {
        Ok(Fields(None))
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Fields, Found> {
        Ok(Fields(Some(variant)))
    }
}

impl Items {
    fn item<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Found> {
        let index = self.next;
        self.next += 1;
        value.serialize(Walk).map_err(|e| e.within(|| format!("[{index}]")).within_variant(self.variant))
    }
}

macro_rules! items {
    ($($trait:ident :: $method:ident),* $(,)?) => {
        $(impl ser::$trait for Items {
            type Ok = ();
            type Error = Found;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Found> {
                self.item(value)
            }
            fn end(self) -> Result<(), Found> {
                Ok(())
            }
        })*
    };
}

items!(SerializeSeq::serialize_element, SerializeTuple::serialize_element, SerializeTupleStruct::serialize_field);

impl ser::SerializeTupleVariant for Items {
    type Ok = ();
    type Error = Found;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Found> {
        self.item(value)
    }
    fn end(self) -> Result<(), Found> {
        Ok(())
    }
}

impl ser::SerializeMap for Fields {
    type Ok = ();
    type Error = Found;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Found> {
        key.serialize(Walk).map_err(|e| e.within(|| "{key}".to_owned()))
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Found> {
        value.serialize(Walk).map_err(|e| e.within(|| "[..]".to_owned()))
    }

    /// Both at once, so the path can name the entry's key (written only
    /// for the error).
    fn serialize_entry<K: Serialize + ?Sized, V: Serialize + ?Sized>(
        &mut self,
        key: &K,
        value: &V,
    ) -> Result<(), Found> {
        self.serialize_key(key)?;
        value.serialize(Walk).map_err(|e| {
            e.within(|| match serde_json::to_string(key) {
                Ok(key) => format!("[{key}]"),
                Err(_) => "[..]".to_owned(),
            })
        })
    }

    fn end(self) -> Result<(), Found> {
        Ok(())
    }
}

macro_rules! fields {
    ($($trait:ident),* $(,)?) => {
        $(impl ser::$trait for Fields {
            type Ok = ();
            type Error = Found;
            fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), Found> {
                value.serialize(Walk).map_err(|e| e.within(field(key)).within_variant(self.0))
            }
            fn end(self) -> Result<(), Found> {
                Ok(())
            }
        })*
    };
}

fields!(SerializeStruct, SerializeStructVariant);

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Serialize;

    use super::to_string;

    #[derive(Serialize)]
    struct Context {
        name: Option<String>,
        scores: Vec<f64>,
        by_tool: BTreeMap<String, (u32, f32)>,
        last: Event,
    }

    #[derive(Serialize)]
    enum Event {
        Scored { value: f64 },
        Pair(f64, f64),
        Plain(f64),
    }

    fn context() -> Context {
        Context {
            name: None,
            scores: vec![1.0, 2.5],
            by_tool: BTreeMap::from([("read".to_owned(), (1, 0.5))]),
            last: Event::Scored { value: 0.25 },
        }
    }

    #[test]
    fn finite_values_are_written_as_serde_json_writes_them() {
        let context = context();
        assert_eq!(to_string(&context).expect("writes"), serde_json::to_string(&context).expect("writes"));
    }

    #[test]
    fn a_float_that_is_not_finite_is_refused_with_its_path() {
        type Change = fn(&mut Context);
        let cases: [(Change, &str); 5] = [
            (|c| c.scores[1] = f64::NAN, "NaN at .scores[1]"),
            (|c| c.by_tool.get_mut("read").expect("entry").1 = f32::INFINITY, "inf at .by_tool[\"read\"][1]"),
            (|c| c.last = Event::Scored { value: f64::NEG_INFINITY }, "-inf at .last.Scored.value"),
            (|c| c.last = Event::Pair(1.0, f64::NAN), "NaN at .last.Pair[1]"),
            (|c| c.last = Event::Plain(f64::NAN), "NaN at .last.Plain"),
        ];
        for (change, expected) in cases {
            let mut context = context();
            change(&mut context);
            let error = to_string(&context).expect_err(expected).to_string();
            assert!(error.starts_with(expected), "{error}");
        }
        let error = to_string(&f64::NAN).expect_err("a bare NaN").to_string();
        assert!(error.starts_with("NaN at the value itself"), "{error}");
    }

    /// A newtype around the float, an `Option` holding it, and a map
    /// written a key and a value at a time (as a hand-written `Serialize`
    /// may) are looked into too.
    #[test]
    fn wrapped_floats_are_found() {
        #[derive(Serialize)]
        struct Score(f64);
        struct ByHand;
        impl Serialize for ByHand {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeMap;
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_key("score")?;
                map.serialize_value(&f32::NAN)?;
                map.end()
            }
        }
        assert!(to_string(&vec![Some(Score(1.0)), Some(Score(f64::INFINITY))]).is_err());
        assert!(to_string(&(None::<f64>, Some(f64::NAN))).is_err());
        assert!(to_string(&ByHand).is_err());
        assert!(to_string(&(None::<f64>, Some(Score(2.0)))).is_ok());
    }
}
