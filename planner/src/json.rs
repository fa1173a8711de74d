//! Reading versioned JSON documents: the version is checked before the shape, so an
//! unknown version is reported as such rather than as a field the old schema lacks.

use std::path::Path;

use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::{PlannerError, SCHEMA_VERSION};

/// Only the version of a document; every other field is ignored here.
#[derive(Deserialize)]
struct Versioned {
    schema_version: u64,
}

/// Parses `text` as the document `what` after checking its `schema_version`.
pub(crate) fn parse<T: DeserializeOwned>(
    text: &str,
    what: &'static str,
) -> Result<T, PlannerError> {
    let json = |source| PlannerError::Json { what, source };
    let Versioned { schema_version } = serde_json::from_str(text).map_err(json)?;
    if schema_version != SCHEMA_VERSION {
        return Err(PlannerError::SchemaVersion {
            what,
            found: schema_version,
            expected: SCHEMA_VERSION,
        });
    }
    serde_json::from_str(text).map_err(json)
}

/// Checks the version of a document built in memory.
pub(crate) fn check_version(found: u64, what: &'static str) -> Result<(), PlannerError> {
    if found == SCHEMA_VERSION {
        Ok(())
    } else {
        Err(PlannerError::SchemaVersion {
            what,
            found,
            expected: SCHEMA_VERSION,
        })
    }
}

/// Reads `path` and turns its text into a value with `from_text`; errors name the file.
pub(crate) fn load<T>(
    path: &Path,
    from_text: impl FnOnce(&str) -> Result<T, PlannerError>,
) -> Result<T, PlannerError> {
    let text = std::fs::read_to_string(path).map_err(|source| PlannerError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    from_text(&text).map_err(|e| e.in_file(path))
}
