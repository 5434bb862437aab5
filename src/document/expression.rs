//! An expression as a step document holds it: its text, parsed again when
//! the document is read, so an executor judges it with no recipe at hand.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A `require`, `when` or `promote-when` expression: as written (after
/// placeholders), and parsed.
#[derive(Debug, Clone)]
pub struct ExpressionText {
    pub text: String,
    pub parsed: anvil_expr::Expr,
}

impl ExpressionText {
    /// Parse `text`; the error says what is wrong with it and where.
    pub fn parse(text: &str) -> Result<ExpressionText, String> {
        match anvil_expr::parse(text) {
            Ok(parsed) => Ok(ExpressionText { text: text.to_string(), parsed }),
            Err(err) => Err(format!("expression \"{text}\": {} at {}", err.message, err.span.0)),
        }
    }
}

/// An expression the recipe's loader parsed, as a document carries it.
impl From<&crate::recipe::Expression> for ExpressionText {
    fn from(expression: &crate::recipe::Expression) -> ExpressionText {
        ExpressionText { text: expression.text.clone(), parsed: expression.parsed.clone() }
    }
}

impl Serialize for ExpressionText {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for ExpressionText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        ExpressionText::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_expression_travels_as_its_text_and_is_parsed_on_reading() {
        let written = ExpressionText::parse("cell.a.ttft_p50_ms < 200").unwrap();
        let json = serde_json::to_string(&written).unwrap();
        assert_eq!(json, "\"cell.a.ttft_p50_ms < 200\"");
        let read: ExpressionText = serde_json::from_str(&json).unwrap();
        assert_eq!(read.parsed.references(), written.parsed.references());
        let broken = serde_json::from_str::<ExpressionText>("\"cell.a.ttft_p50_ms <\"").unwrap_err();
        assert!(broken.to_string().contains("cell.a.ttft_p50_ms <"), "{broken}");
    }
}
