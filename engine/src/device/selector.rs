//! Naming an adapter: by its position in the adapter list, as the n-th adapter of a graphics
//! API, or by a stable id (API, name and ordinal) that survives a reordering of the list.

use std::{fmt, str::FromStr};

/// Which adapter to open, as `--adapter` and plans name it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum AdapterSelector {
    /// Position in the adapter list of the process's graphics APIs (`megagraph devices`), e.g. `1`.
    Position(usize),
    /// The `ordinal`-th adapter of one API, e.g. `gl:0`.
    OfApi {
        /// The graphics API.
        api: wgpu::Backend,
        /// Position among that API's adapters.
        ordinal: usize,
    },
    /// A stable id, e.g. `vulkan:llvmpipe (LLVM 15.0.6, 256 bits)#0`: the API, the adapter's name,
    /// and its position among the adapters of that API with that name.
    Id {
        /// The graphics API.
        api: wgpu::Backend,
        /// The adapter's name.
        name: String,
        /// Position among the adapters of that API and name.
        ordinal: usize,
    },
}

/// The lower-case name of a graphics API, as `--backends` and adapter ids spell it.
pub fn api_name(api: wgpu::Backend) -> &'static str {
    match api {
        wgpu::Backend::Vulkan => "vulkan",
        wgpu::Backend::Gl => "gl",
        wgpu::Backend::Metal => "metal",
        wgpu::Backend::Dx12 => "dx12",
        wgpu::Backend::BrowserWebGpu => "webgpu",
        wgpu::Backend::Noop => "noop",
    }
}

/// The graphics API spelled `name` (`vulkan`, `gl`, `metal` or `dx12`).
pub fn parse_api(name: &str) -> Result<wgpu::Backend, String> {
    match name.trim() {
        "vulkan" => Ok(wgpu::Backend::Vulkan),
        "gl" => Ok(wgpu::Backend::Gl),
        "metal" => Ok(wgpu::Backend::Metal),
        "dx12" => Ok(wgpu::Backend::Dx12),
        other => Err(format!(
            "{other:?} is no graphics API: expected vulkan, gl, metal or dx12"
        )),
    }
}

impl FromStr for AdapterSelector {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let invalid = || {
            format!(
                "{text:?} names no adapter: expected a position in `megagraph devices` (e.g. 1), API:N (e.g. gl:0) or an id API:NAME#N"
            )
        };
        let Some((api, rest)) = text.split_once(':') else {
            return text
                .trim()
                .parse()
                .map(AdapterSelector::Position)
                .map_err(|_| invalid());
        };
        let api = parse_api(api).map_err(|e| format!("{}: {e}", invalid()))?;
        if let Ok(ordinal) = rest.parse() {
            return Ok(AdapterSelector::OfApi { api, ordinal });
        }
        let (name, ordinal) = rest.rsplit_once('#').ok_or_else(invalid)?;
        let ordinal = ordinal.parse().map_err(|_| invalid())?;
        if name.is_empty() {
            return Err(invalid());
        }
        Ok(AdapterSelector::Id {
            api,
            name: name.to_string(),
            ordinal,
        })
    }
}

impl fmt::Display for AdapterSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AdapterSelector::Position(index) => write!(f, "{index}"),
            AdapterSelector::OfApi { api, ordinal } => write!(f, "{}:{ordinal}", api_name(*api)),
            AdapterSelector::Id { api, name, ordinal } => {
                write!(f, "{}:{name}#{ordinal}", api_name(*api))
            }
        }
    }
}

impl AdapterSelector {
    /// The graphics API the selector names, if any (a position names none).
    pub fn api(&self) -> Option<wgpu::Backend> {
        match self {
            AdapterSelector::Position(_) => None,
            AdapterSelector::OfApi { api, .. } | AdapterSelector::Id { api, .. } => Some(*api),
        }
    }

    /// The position of the adapter this selector names in `adapters` (their API and name, in
    /// list order), if present.
    pub fn find(&self, adapters: &[(wgpu::Backend, String)]) -> Option<usize> {
        match self {
            AdapterSelector::Position(index) => (*index < adapters.len()).then_some(*index),
            AdapterSelector::OfApi { api, ordinal } => adapters
                .iter()
                .enumerate()
                .filter(|(_, (a, _))| a == api)
                .nth(*ordinal)
                .map(|(i, _)| i),
            AdapterSelector::Id { api, name, ordinal } => adapters
                .iter()
                .enumerate()
                .filter(|(_, (a, n))| a == api && n == name)
                .nth(*ordinal)
                .map(|(i, _)| i),
        }
    }
}

/// The stable id of each of `adapters` (their API and name, in list order).
pub fn stable_ids(adapters: &[(wgpu::Backend, String)]) -> Vec<AdapterSelector> {
    adapters
        .iter()
        .enumerate()
        .map(|(i, (api, name))| AdapterSelector::Id {
            api: *api,
            name: name.clone(),
            ordinal: adapters[..i]
                .iter()
                .filter(|(a, n)| a == api && n == name)
                .count(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const LAVAPIPE: &str = "llvmpipe (LLVM 15.0.6, 256 bits)";

    fn machine() -> Vec<(wgpu::Backend, String)> {
        vec![
            (wgpu::Backend::Vulkan, "card".to_string()),
            (wgpu::Backend::Vulkan, LAVAPIPE.to_string()),
            (wgpu::Backend::Gl, LAVAPIPE.to_string()),
            (wgpu::Backend::Vulkan, "card".to_string()),
        ]
    }

    #[test]
    fn selectors_parse_and_print_back() {
        for text in [
            "3",
            "gl:0",
            "vulkan:12",
            &format!("vulkan:{LAVAPIPE}#1"),
            "metal:Apple M2: Pro#0",
        ] {
            let selector: AdapterSelector = text.parse().unwrap();
            assert_eq!(selector.to_string(), text);
        }
        assert_eq!(
            "dx12:NVIDIA A100#2".parse::<AdapterSelector>(),
            Ok(AdapterSelector::Id {
                api: wgpu::Backend::Dx12,
                name: "NVIDIA A100".to_string(),
                ordinal: 2
            })
        );
    }

    #[test]
    fn bad_selectors_are_refused_with_the_forms_expected() {
        for text in [
            "",
            "x",
            "-1",
            "opengl:0",
            "gl:",
            "gl:card",
            "gl:card#x",
            "gl:#0",
        ] {
            let error = text.parse::<AdapterSelector>().unwrap_err();
            assert!(error.contains("names no adapter"), "{text}: {error}");
            assert!(error.contains("API:N"), "{text}: {error}");
        }
    }

    #[test]
    fn each_form_finds_its_adapter() {
        let adapters = machine();
        let find = |text: &str| text.parse::<AdapterSelector>().unwrap().find(&adapters);
        assert_eq!(find("2"), Some(2));
        assert_eq!(find("4"), None);
        assert_eq!(find("gl:0"), Some(2));
        assert_eq!(find("gl:1"), None);
        assert_eq!(find("vulkan:2"), Some(3));
        assert_eq!(find("vulkan:card#1"), Some(3));
        assert_eq!(find(&format!("gl:{LAVAPIPE}#0")), Some(2));
        assert_eq!(find(&format!("vulkan:{LAVAPIPE}#1")), None);
    }

    #[test]
    fn stable_ids_survive_a_reordering() {
        let adapters = machine();
        let ids = stable_ids(&adapters);
        assert_eq!(ids[3].to_string(), "vulkan:card#1");
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(id.find(&adapters), Some(i));
        }
        // Another order that keeps adapters of one API and name in their order (as a sort by
        // device type does): every adapter keeps its id.
        let order = [2, 0, 3, 1];
        let reordered: Vec<_> = order.map(|i| adapters[i].clone()).to_vec();
        let reordered_ids = stable_ids(&reordered);
        for (position, original) in order.into_iter().enumerate() {
            assert_eq!(reordered_ids[position], ids[original]);
            assert_eq!(ids[original].find(&reordered), Some(position));
        }
    }
}
