//! A launch's image made present, written once over the [engine port](crate::port): agentc
//! pulls only when asked (`--pull`), otherwise a missing image is refused before anything is
//! created ([`ExecError::ImageMissing`], which says how to build it).

use crate::port::{EngineError, EngineErrorKind, EnginePort};
use crate::ExecError;

/// Makes sure the engine has `image`: with `pull`, a missing image is pulled, `notify` being
/// handed a line saying so and then one line per line of progress (`pull: ...`); without, it
/// is refused ([`ExecError::ImageMissing`], which mentions `--pull`). A pull the registry
/// refuses is [`ExecError::PullFailed`], with the engine's words and a hint; an engine out of
/// reach is [`ExecError::Connect`].
pub async fn ensure_image<P: EnginePort>(
    port: &P,
    image: &str,
    pull: bool,
    notify: &mut (dyn FnMut(&str) + Send),
) -> Result<(), ExecError> {
    // An engine out of reach is the launch's connect error, as either backend reports it; a
    // command line that is not installed says so, with its own hint.
    let unreachable = |error: EngineError, step| error.in_launch(port.engine(), step);
    let present = || async {
        port.image_exists(image)
            .await
            .map_err(|error| unreachable(error, "inspect the image"))
    };
    if present().await? {
        return Ok(());
    }
    let missing = || ExecError::ImageMissing {
        engine: port.engine(),
        image: image.to_string(),
    };
    if !pull {
        return Err(missing());
    }
    notify(&format!("image {image} is not present; pulling it"));
    port.pull_image(image, &mut |line| notify(&format!("pull: {line}")))
        .await
        .map_err(|error| match error.kind {
            EngineErrorKind::Unavailable | EngineErrorKind::NoProgram => {
                unreachable(error, "pull the image")
            }
            _ => ExecError::pull_failed(
                image,
                error
                    .detail
                    .trim()
                    .trim_start_matches("Error response from daemon: "),
            ),
        })?;
    if present().await? {
        Ok(())
    } else {
        Err(missing())
    }
}

/// Refuses `container` ([`ExecError::ImageWithoutFirewall`]) when its egress allowlist is left
/// to the image's own firewall ([`agentc_policy::image_firewall_holds_egress`]) and its image
/// says it has none ([`agentc_policy::presets::IMAGE_FIREWALL_LABEL`] `none`): the launch would run open. Asks the engine
/// only for such a launch.
pub async fn refuse_missing_firewall<P: EnginePort>(
    port: &P,
    container: &agentc_policy::ContainerSpec,
) -> Result<(), ExecError> {
    if !agentc_policy::image_firewall_holds_egress(container) {
        return Ok(());
    }
    let inspect = port
        .image_inspect(&container.image)
        .await
        .map_err(|error| error.in_launch(port.engine(), "inspect the image"))?;
    let none = inspect
        .and_then(|inspect| inspect.config)
        .and_then(|config| config.labels)
        .and_then(|labels| {
            labels
                .get(agentc_policy::presets::IMAGE_FIREWALL_LABEL)
                .cloned()
        })
        .is_some_and(|value| value == "none");
    if none {
        return Err(ExecError::ImageWithoutFirewall {
            image: container.image.clone(),
        });
    }
    Ok(())
}
