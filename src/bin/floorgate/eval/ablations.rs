//! The ablations of `--ablation` and `--failures-of`: the shipped v1 rules with each refinement
//! turned off (or a measured, unshipped one turned on), and v2's rules the same way.

use floorgate::rank::Rules;

/// v2's rule variants, one per registry rule: the shipped rules without it (`v2 - NAME`) or, for
/// a rule not shipped, with it (`v2 + NAME`); each with the rule's registry name.
pub fn v2_variants() -> impl Iterator<Item = (&'static str, String, floorgate::rank::v2::Rules)> {
    let shipped = floorgate::rank::v2::Rules::SHIPPED;
    floorgate::rank::v2::REGISTRY
        .iter()
        .map(move |&(rule, name, _)| {
            if shipped.has(rule) {
                (name, format!("v2 - {name}"), shipped.without(rule))
            } else {
                (name, format!("v2 + {name}"), shipped.with(rule))
            }
        })
}

/// The refinements, each turned off in turn for `--ablation`.
pub fn ablations() -> Vec<(&'static str, Rules)> {
    let s = Rules::SHIPPED;
    vec![
        (
            "shipped - argument values",
            Rules {
                argument_values_no_mass: false,
                ..s
            },
        ),
        ("shipped - stemming", Rules { stem: false, ..s }),
        (
            "shipped - parameter names",
            Rules {
                parameter_names: false,
                ..s
            },
        ),
        (
            "shipped - product detection",
            Rules {
                product_detection: false,
                ..s
            },
        ),
        (
            "shipped - prose words",
            Rules {
                prose_words_no_mass: false,
                ..s
            },
        ),
        (
            "shipped + named connector only",
            Rules {
                named_connector_only: true,
                ..s
            },
        ),
        (
            "shipped - compounds",
            Rules {
                compounds: false,
                ..s
            },
        ),
        (
            "shipped - synonyms",
            Rules {
                synonyms: false,
                ..s
            },
        ),
        (
            "shipped - unknown word abstains",
            Rules {
                unknown_word_abstains: false,
                ..s
            },
        ),
        (
            "shipped - short prefix tail",
            Rules {
                short_prefix_tail: false,
                ..s
            },
        ),
        (
            // Measured and not shipped (docs/ranking-log.md, rule 14).
            "shipped + named connector vocabulary",
            Rules {
                named_connector_vocabulary: true,
                ..s
            },
        ),
        (
            "shipped - name anchor",
            Rules {
                name_anchor: false,
                ..s
            },
        ),
        (
            // Measured and not shipped (docs/ranking-log.md, rule 16).
            "shipped + synonym anchors",
            Rules {
                synonym_anchors: true,
                ..s
            },
        ),
        (
            "shipped - details",
            Rules {
                details_no_mass: false,
                ..s
            },
        ),
        (
            "shipped - specific first",
            Rules {
                specific_first: false,
                ..s
            },
        ),
        (
            "shipped - object anchor",
            Rules {
                object_anchor: false,
                ..s
            },
        ),
        (
            "shipped - destructive intent",
            Rules {
                destructive_intent: false,
                ..s
            },
        ),
        (
            // Measured and not shipped (docs/ranking-log.md, rule 19).
            "shipped + read intent",
            Rules {
                read_intent: true,
                ..s
            },
        ),
        (
            "shipped - argument phrases",
            Rules {
                argument_phrases: false,
                ..s
            },
        ),
        (
            "shipped - compound names keep mass",
            Rules {
                compound_names_keep_mass: false,
                ..s
            },
        ),
    ]
}
