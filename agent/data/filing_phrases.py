"""The sentences the synthetic filings are built from (data only; :mod:`agent.data.filings_text`
fills them in).

Every text here is written for localfin: generic corporate prose of the kind a 10-K or 10-Q
management discussion and risk-factor section holds, with ``{placeholders}`` the generator fills
from a company's sector words and its period's figures. Nothing is taken from a real filing.
"""

from __future__ import annotations

__all__ = ["SECTOR_WORDS", "MDA", "RISKS", "RISK_TAILS", "RISK_INTRO", "QUARTER_RISK_INTRO"]

#: Words per sector: segments (two or three), products, inputs, customers, channels, rivals,
#: regulators and the market the business sells into.
SECTOR_WORDS: dict[str, dict[str, tuple[str, ...]]] = {
    "Consumer Staples": {
        "segments": ("Packaged Foods", "Beverages", "Household Care"),
        "products": ("branded snacks", "ready-to-drink beverages", "cleaning products", "frozen meals"),
        "inputs": ("grains", "sweeteners", "packaging resin", "aluminum cans", "freight"),
        "customers": ("grocery chains", "mass merchants", "club stores", "convenience retailers"),
        "channels": ("e-commerce partners", "foodservice distributors", "dollar stores"),
        "rivals": ("private-label producers", "multinational brand owners", "regional brands"),
        "regulators": ("food safety authorities", "labeling regulators", "environmental agencies"),
        "market": ("household consumption", "in-store traffic", "promotional intensity"),
    },
    "Energy": {
        "segments": ("Upstream", "Midstream", "Refining and Marketing"),
        "products": ("crude oil", "natural gas", "natural gas liquids", "refined products"),
        "inputs": ("drilling services", "steel tubulars", "sand and water", "contract labor"),
        "customers": ("refiners", "utilities", "marketers", "petrochemical plants"),
        "channels": ("pipeline networks", "export terminals", "wholesale racks"),
        "rivals": ("independent producers", "integrated majors", "national oil companies"),
        "regulators": ("state conservation commissions", "federal land agencies", "emissions regulators"),
        "market": ("benchmark commodity prices", "basis differentials", "refining margins"),
    },
    "Information Technology": {
        "segments": ("Cloud Services", "Devices and Systems", "Enterprise Software"),
        "products": (
            "subscription software",
            "data-center processors",
            "storage systems",
            "network equipment",
        ),
        "inputs": ("wafer capacity", "memory components", "data-center power", "engineering talent"),
        "customers": ("enterprises", "cloud providers", "public-sector agencies", "small businesses"),
        "channels": ("resellers", "system integrators", "online marketplaces"),
        "rivals": ("large platform companies", "specialized start-ups", "open-source alternatives"),
        "regulators": ("data-protection authorities", "export-control agencies", "competition authorities"),
        "market": ("enterprise IT budgets", "cloud consumption", "hardware refresh cycles"),
    },
}

#: Management-discussion paragraphs by section. A 10-K uses every section; a 10-Q the ones
#: marked for the quarter in :mod:`agent.data.filings_text`.
MDA: dict[str, tuple[str, ...]] = {
    "intro": (
        "The following discussion is meant to help readers understand {name_s} results of operations "
        "and financial condition. It should be read together with the consolidated financial statements "
        "and the accompanying notes in this report. Some statements below look ahead and involve risks "
        "and uncertainties; actual results may differ materially from those we describe, for the reasons "
        "set out under Risk Factors and elsewhere in this report.",
        "This section explains the main drivers of {name_s} performance for the {period} and the factors "
        "management expects to matter in coming periods. Amounts are in millions of dollars unless noted, "
        "and percentages are computed on unrounded figures, so some totals may not add. The discussion "
        "contains forward-looking statements that are subject to the uncertainties described in Risk "
        "Factors, and readers should not place undue reliance on them.",
    ),
    "overview": (
        "{name} operates through its {segments} segments, serving {customers} and {customers2} in more "
        "than {countries} countries. Our strategy centres on growing {product} while improving the "
        "efficiency of the assets that support it, funding the businesses with the best long-term returns "
        "and returning excess cash to shareholders.",
        "During the {period}, demand conditions were {tone}. {market_cap} remained the most important "
        "external driver of our results, and we continued to adjust pricing, mix and cost programs to "
        "the environment. Management monitors order trends, backlog and channel inventory weekly and "
        "adjusts production and spending plans when they move outside expected ranges.",
        "We continued to invest in {product} and in the capabilities that support {product2}. Investment "
        "priorities for the period included capacity in our {segment_a} segment, upgrades to information "
        "systems that support planning and distribution, and programs to attract and retain specialized "
        "talent. We expect these investments to weigh on margins in the near term and to support growth "
        "over a multi-year horizon.",
        "Cost inflation in {input} and {input2} {cost_tone} during the period. We offset part of the "
        "pressure through productivity programs, procurement savings and selective price increases, and "
        "we continue to evaluate hedging and long-term supply agreements where they reduce volatility "
        "without limiting our flexibility.",
        "Our competitive position depends on the breadth of our portfolio, the reliability of our "
        "operations and our relationships with {customers}. {rivals_cap} remained active in our markets, "
        "and we responded with targeted investment in product quality, service levels and marketing "
        "rather than broad price reductions.",
    ),
    "highlights": (
        "Highlights of the {period}: revenue was ${revenue:,} million, {rev_up} {rev_pct}% from "
        "${revenue_prior:,} million a year earlier; gross margin was {gm}% of revenue, {gm_dir} {gm_bps} "
        "basis points; operating income was ${op_income:,} million; net income was ${net_income:,} "
        "million, or ${eps} per diluted share; cash generated by operating activities was ${cfo:,} "
        "million; and we returned ${returned:,} million to shareholders through dividends and repurchases.",
    ),
    "revenue": (
        "Revenue {rev_dir} {rev_pct}% to ${revenue:,} million. Volume contributed approximately "
        "{vol_pts} percentage points of the change and price and mix approximately {price_pts} points, "
        "while changes in foreign exchange rates {fx_dir} reported revenue by about {fx_pts} points. "
        "Growth was strongest in {segment_a}, where demand from {customers} {seg_tone}.",
        "Revenue from {customers} represented approximately {cust_share}% of the total, compared with "
        "{cust_share_prior}% a year earlier. Sales through {channels} grew faster than the company as a "
        "whole as customers shifted purchasing to those channels. No single customer accounted for more "
        "than {top_customer}% of revenue.",
        "Revenue outside the United States was {intl_share}% of the total. International growth reflected "
        "higher shipments of {product} in several markets, partly offset by softer conditions in others "
        "and by the translation effect of a {fx_word} dollar. We price most international sales in local "
        "currency and manage the resulting exposure through natural offsets and derivative contracts.",
    ),
    "segment": (
        "{segment} revenue was ${seg_revenue:,} million, {seg_up} {seg_pct}% from the prior-year period. "
        "The change reflected {seg_driver}. Segment operating income was ${seg_income:,} million, and "
        "segment operating margin was {seg_margin}%, {seg_margin_dir} than a year earlier; {seg_margin_why}.",
        "Within {segment}, sales of {product} {seg_dir} while sales of {product2} were {seg_tone2}. "
        "Order intake during the period was {orders_tone} and ended with backlog of approximately "
        "${backlog:,} million. We expect the segment's growth to depend on {market} and on the timing of "
        "new product introductions planned for the coming periods.",
        "Capital spending in {segment} focused on capacity for {product} and on automation that reduces "
        "unit costs. Headcount in the segment {seg_headcount} during the period, and management "
        "reallocated engineering and sales resources toward the customer groups with the highest "
        "expected returns, including {customers2}. The segment's results also include the effect of "
        "intersegment transfers, which are priced at amounts that approximate market terms.",
    ),
    "margin": (
        "Gross margin was {gm}% of revenue compared with {gm_prior}% in the prior-year period. The change "
        "reflected {gm_why}. Higher costs of {input} reduced gross margin by about {input_bps} basis "
        "points, which was more than offset by pricing actions and productivity savings in our plants "
        "and distribution network.",
        "Research and development expense was ${rnd:,} million, or {rnd_pct}% of revenue, compared with "
        "${rnd_prior:,} million. The increase reflected headcount added to programs in {segment_a} and "
        "higher spending on {product2}. We expect research and development to remain near its current "
        "share of revenue as we fund projects with multi-year payback periods.",
        "Selling, general and administrative expense was ${sga:,} million, or {sga_pct}% of revenue, "
        "compared with ${sga_prior:,} million. Higher marketing and compensation costs were partly offset "
        "by savings from the reorganization of shared services announced in the prior year. Restructuring "
        "and related charges were ${restructuring:,} million, mainly severance and asset write-downs.",
        "Other income, net was ${other_income:,} million, reflecting interest earned on cash and "
        "investments net of interest expense on our borrowings, foreign currency gains and losses, and "
        "changes in the fair value of equity investments. The effective tax rate was {tax_rate}%, compared "
        "with {tax_rate_prior}% a year earlier, reflecting the geographic mix of earnings and discrete "
        "items recognized during the period.",
    ),
    "liquidity": (
        "At period end we held cash, cash equivalents and marketable securities of ${cash:,} million, "
        "compared with ${cash_prior:,} million at the end of the prior fiscal year. We believe these "
        "balances, cash generated by operations and access to credit markets will be sufficient to meet "
        "working capital, capital expenditure, debt service and shareholder return requirements for at "
        "least the next twelve months.",
        "Cash provided by operating activities was ${cfo:,} million, compared with ${cfo_prior:,} million "
        "in the prior-year period. The change reflected higher earnings and movements in working capital, "
        "mainly inventories of {product} and receivables from {customers}. Cash used in investing "
        "activities was ${cfi:,} million, including capital expenditures of ${capex:,} million.",
        "Cash used in financing activities was ${cff:,} million. We repurchased approximately "
        "{buyback_shares} million shares for ${buyback:,} million and paid dividends of ${dividends:,} "
        "million. At period end, ${authorization:,} million remained available under the repurchase "
        "program authorized by the board of directors, which has no expiration date.",
        "Total debt was ${debt:,} million, consisting of senior notes with maturities through the next "
        "{debt_years} years and commercial paper. We maintain a revolving credit facility of "
        "${revolver:,} million, under which no amounts were outstanding. The facility contains customary "
        "covenants, including a maximum leverage ratio, with which we were in compliance.",
        "Our material cash requirements include purchase obligations for {input}, capital commitments "
        "for facilities in {segment_a}, operating lease payments and scheduled debt maturities. Purchase "
        "obligations outstanding at period end were approximately ${purchase_obligations:,} million, the "
        "majority due within twelve months.",
    ),
    "estimates": (
        "Revenue recognition. We recognize revenue when control of a product or service passes to the "
        "customer, in the amount we expect to be entitled to. Arrangements that combine {product} with "
        "related services require judgment to identify performance obligations and to allocate the "
        "transaction price on a relative standalone selling price basis. Estimates of returns, rebates "
        "and promotional allowances reduce revenue and are updated each period from historical experience.",
        "Inventories. Inventories are stated at the lower of cost and net realizable value. We review "
        "quantities on hand against forecast demand and record write-downs for excess or obsolete items. "
        "A change in demand for {product}, or in the expected selling prices of older products, could "
        "require additional write-downs in future periods.",
        "Goodwill and long-lived assets. We test goodwill for impairment at least annually at the "
        "reporting-unit level, comparing estimated fair value, based on discounted cash flows and market "
        "multiples, with carrying value. The most recent test indicated that the fair value of each "
        "reporting unit exceeded its carrying value by a substantial margin.",
        "Income taxes. We are subject to income taxes in the United States and many foreign "
        "jurisdictions. Significant judgment is required in determining the provision for income taxes, "
        "the recognition of uncertain tax positions and the realizability of deferred tax assets. We "
        "believe our reserves are adequate, but the final outcome of audits could differ from them.",
        "Loss contingencies. We are involved in legal proceedings, claims and regulatory matters that "
        "arise in the ordinary course of business. We record a liability when a loss is probable and "
        "reasonably estimable, and disclose matters where a loss is reasonably possible. Assessing these "
        "matters involves judgment about future events and the possible range of outcomes.",
    ),
    "seasonality": (
        "Our business is moderately seasonal. Shipments of {product} are typically highest in the "
        "period before major selling seasons of {customers}, and working capital builds ahead of them. "
        "Promotional timing, weather and the number of selling days in a period can shift revenue "
        "between quarters, so results for a quarter are not necessarily indicative of the full year.",
    ),
    "inflation": (
        "Inflation affected our costs for {input}, labor, freight and energy. We seek to recover higher "
        "costs through pricing, productivity and sourcing, but recovery often lags cost increases by one "
        "or two quarters, and competitive conditions may limit how much we can pass on to {customers}.",
        "Higher interest rates increased the cost of our floating-rate borrowings and the yield on our "
        "cash and investments. Because our cash balances exceeded floating-rate debt for most of the "
        "period, the net effect on other income was {rate_effect}. Rates also affect the discount rates "
        "used in our impairment tests and pension obligations.",
    ),
    "non_gaap": (
        "In addition to results prepared under generally accepted accounting principles, management uses "
        "adjusted operating income, which excludes restructuring charges, acquisition-related costs and "
        "certain other items that do not reflect the ongoing performance of the business. Adjusted "
        "operating income was ${adj_op_income:,} million, compared with operating income of "
        "${op_income:,} million as reported. These measures supplement, and are not a substitute for, "
        "the reported figures, and may differ from similarly titled measures of other companies.",
        "Free cash flow, defined as cash provided by operating activities less capital expenditures, was "
        "${fcf:,} million. Management uses free cash flow to evaluate the cash available for dividends, "
        "repurchases, acquisitions and debt reduction. Free cash flow does not represent the residual "
        "cash available for discretionary spending, because it excludes mandatory debt service and other "
        "commitments.",
    ),
    "market_risk": (
        "Quantitative and qualitative disclosures about market risk. We are exposed to changes in "
        "interest rates, foreign exchange rates and the prices of {input} and {input2}. We use derivative "
        "instruments, including forward contracts, options and swaps, to manage some of these exposures, "
        "and we do not hold derivatives for trading purposes.",
        "A hypothetical 10% adverse change in the exchange rates of the currencies in which we do "
        "business would have reduced pre-tax earnings by approximately ${fx_sensitivity:,} million for "
        "the period, before the offsetting effect of hedges. A hypothetical 100 basis point increase in "
        "interest rates would have changed the fair value of our fixed-rate debt by approximately "
        "${rate_sensitivity:,} million, with no effect on earnings.",
        "Commodity exposure arises mainly from purchases of {input}. A hypothetical 10% increase in its "
        "average price would have raised cost of sales by approximately ${commodity_sensitivity:,} "
        "million before pricing actions and hedges. We manage this exposure through supply agreements "
        "with fixed or capped prices and, where markets allow, through exchange-traded contracts.",
    ),
    "pronouncements": (
        "Recently issued accounting standards that are not yet effective, including guidance on segment "
        "disclosures and income tax disclosures, are not expected to have a material effect on our "
        "financial position or results of operations; they will expand certain disclosures.",
    ),
    "outlook": (
        "Looking ahead, we expect {market} to remain the main source of uncertainty. Our plans assume "
        "{outlook_tone} demand from {customers}, continued cost pressure in {input} and stable exchange "
        "rates. We will continue to prioritize investment in {segment_a}, manage discretionary spending "
        "closely and adjust capacity if demand diverges from these assumptions.",
        "Known trends that may affect future results include the pace of adoption of {product2}, pricing "
        "behavior of {rivals}, changes in trade policy affecting {input2}, and the requirements of "
        "{regulators}. Management reviews these factors regularly and updates its plans as conditions "
        "evolve.",
    ),
}

#: The opening of a 10-K's risk-factor section.
RISK_INTRO = (
    "ITEM 1A. RISK FACTORS\n\nInvesting in our securities involves risk. The factors below could "
    "materially and adversely affect {name_s} business, financial condition, results of operations "
    "and the trading price of its shares. They are not the only risks we face: risks not presently "
    "known to us, or that we currently consider immaterial, may also affect us. The factors are "
    "grouped by category and are not listed in order of importance."
)
#: The opening of a 10-Q's risk-factor update.
QUARTER_RISK_INTRO = (
    "PART II, ITEM 1A. RISK FACTORS\n\nThere have been no material changes to the risk factors "
    "described in {name_s} most recent Annual Report on Form 10-K, except as set out below. The "
    "factors below supplement, and should be read together with, those described there."
)

#: Closing paragraphs, one of which follows each factor of a 10-K (chosen by the seed).
RISK_TAILS: tuple[str, ...] = (
    "Any of these developments could occur at the same time as others described in this section, "
    "and their combined effect on our revenue from {customers}, our margins and our cash flows could "
    "be greater than the effect of any one of them. Our planning assumes conditions that may not hold.",
    "We may be unable to adjust our cost structure quickly enough to offset the effects of such events, "
    "particularly in {segment_a}, where a large share of costs is committed in advance. This could "
    "reduce our profitability and require us to revise the financial targets we have communicated.",
    "Managing these matters requires judgment and resources, and the measures we take may prove "
    "insufficient or more costly than expected. They may also divert attention from initiatives in "
    "{product2} that we consider important for our long-term growth.",
    "Although we monitor these exposures and maintain plans to respond, we cannot be certain that those "
    "plans will work as intended, and the effects could persist for several reporting periods before "
    "conditions normalize.",
)

#: (category, heading, body) of each risk factor; the body is two paragraphs.
RISKS: tuple[tuple[str, str, str], ...] = (
    (
        "Risks Related to Our Business and Industry",
        "Demand for {product} depends on conditions we do not control.",
        "Our results depend on {market} and on the spending decisions of {customers}. A slowdown in "
        "economic activity, higher interest rates or reduced confidence could lead customers to delay or "
        "cancel purchases, reduce order sizes or seek lower prices, and our revenue and margins could "
        "decline quickly because a large share of our costs is fixed in the short term.\n\nForecasting "
        "demand is difficult, particularly for new products. If we overestimate demand we may hold excess "
        "inventory and capacity and record write-downs; if we underestimate it we may lose sales and "
        "market share to competitors that can deliver sooner.",
    ),
    (
        "Risks Related to Our Business and Industry",
        "We face intense competition, and our market share and margins could decline.",
        "We compete with {rivals} and {rivals2}, some of which have greater resources, broader portfolios "
        "or lower cost structures. Competitors may introduce products that are cheaper or more attractive "
        "to {customers}, bundle offerings in ways we cannot match, or accept lower margins to gain share.\n\n"
        "To compete we must keep investing in product development, marketing and service. These "
        "investments may not produce the results we expect, and price competition could reduce our "
        "margins even where we retain customers.",
    ),
    (
        "Risks Related to Our Business and Industry",
        "Our growth depends on the success of new offerings such as {product2}.",
        "We devote significant resources to developing {product2} and related capabilities. Development "
        "cycles are long, outcomes are uncertain, and customers may adopt new offerings more slowly than "
        "we anticipate. Delays, quality problems or a failure to anticipate changes in customer "
        "preferences could leave us with products that do not sell at expected volumes or prices.\n\n"
        "New offerings may also carry lower margins than mature products at first, and their success "
        "may come at the expense of sales of our existing products.",
    ),
    (
        "Risks Related to Our Business and Industry",
        "We rely on a limited number of customers and channels for a significant share of revenue.",
        "A significant portion of our revenue comes from {customers} and through {channels}. These "
        "customers have substantial bargaining power and may demand lower prices, longer payment terms "
        "or greater promotional support. The loss of, or a material reduction in purchases by, a major "
        "customer could harm our results.\n\nConsolidation among customers and channel partners could "
        "increase their bargaining power further and expose us to greater credit risk if one of them "
        "experiences financial difficulty.",
    ),
    (
        "Risks Related to Our Business and Industry",
        "Acquisitions, divestitures and alliances may not deliver the benefits we expect.",
        "We may acquire businesses, divest others or enter into joint ventures. These transactions involve "
        "risks, including difficulties integrating operations and systems, the loss of key employees or "
        "customers, unanticipated liabilities and the diversion of management attention.\n\nWe may pay "
        "more than an acquired business proves to be worth, record impairment charges, or be unable to "
        "realize expected cost savings, and divestitures may leave us with stranded costs.",
    ),
    (
        "Operational Risks",
        "Disruptions in the supply of {input} and other inputs could harm our operations.",
        "We depend on suppliers for {input} and {input2}, some of which are available from only a few "
        "sources. Shortages, price increases, quality problems or the failure of a key supplier could "
        "delay production, raise our costs or force us to redesign products.\n\nLong-term supply "
        "commitments protect us in some cases but may require us to buy more than we need if demand "
        "falls, and our efforts to qualify alternative sources may take longer than planned.",
    ),
    (
        "Operational Risks",
        "Our operations are concentrated in a limited number of facilities.",
        "A significant portion of our production and distribution takes place at a small number of "
        "sites. Natural disasters, severe weather, fires, power outages, labor actions or public health "
        "events affecting these sites could interrupt operations for extended periods.\n\nInsurance may "
        "not cover all losses from such events, and rebuilding or relocating capacity could take many "
        "months and cost substantially more than our estimates.",
    ),
    (
        "Operational Risks",
        "Cyberattacks and system failures could disrupt our business and expose us to liability.",
        "We rely on information systems to run operations, process transactions and store data about "
        "customers, employees and suppliers. Attackers may gain access through malware, phishing or "
        "weaknesses in third-party software, and some attacks may go undetected for long periods.\n\n"
        "A successful attack or a major system failure could interrupt operations, lead to the loss or "
        "disclosure of sensitive information, require costly remediation and expose us to claims and "
        "regulatory penalties, and could damage our reputation with {customers}.",
    ),
    (
        "Operational Risks",
        "We may be unable to attract and retain key personnel.",
        "Our success depends on executives, engineers and other specialized employees, for whom "
        "competition is intense. The loss of key people, or difficulty hiring and training new ones, "
        "could delay programs and weaken our execution.\n\nCompensation costs may rise faster than we "
        "expect, and changes in immigration policy or remote-work practices could affect our ability to "
        "recruit in the locations where we operate.",
    ),
    (
        "Operational Risks",
        "Product quality problems could result in recalls, claims and reputational harm.",
        "Defects in {product}, whether caused by our processes or by components from suppliers, could "
        "lead to recalls, warranty costs, product liability claims and lost sales. Investigating and "
        "correcting such problems can take considerable time and resources.\n\nEven unfounded "
        "allegations of quality problems, spread quickly through social media, could damage our brands "
        "and our relationships with {customers}.",
    ),
    (
        "Operational Risks",
        "Climate change and related measures could increase our costs.",
        "Physical effects of climate change, such as more frequent extreme weather and water scarcity, "
        "could disrupt our operations and those of our suppliers. Measures to reduce greenhouse gas "
        "emissions could raise the cost of energy and {input} and require capital investment.\n\n"
        "Customers, investors and {regulators} increasingly expect disclosure and progress on "
        "sustainability goals; failing to meet those expectations, or to meet goals we have announced, "
        "could harm our reputation and access to capital.",
    ),
    (
        "Legal and Regulatory Risks",
        "We are subject to extensive regulation, and changes in law could increase our costs.",
        "Our operations are subject to rules administered by {regulators} and other authorities covering "
        "product standards, environmental matters, competition, data and employment. Compliance requires "
        "significant resources, and new or stricter requirements could restrict our activities or raise "
        "our costs.\n\nViolations, even inadvertent ones, could result in fines, injunctions, the loss of "
        "permits or licenses and damage to our reputation.",
    ),
    (
        "Legal and Regulatory Risks",
        "We are party to litigation and investigations whose outcomes are uncertain.",
        "From time to time we are involved in lawsuits, arbitrations and government investigations, "
        "including matters involving commercial disputes, intellectual property, product liability and "
        "employment. Litigation is costly and diverts management attention, and its outcome is difficult "
        "to predict.\n\nAn adverse judgment or settlement could require us to pay substantial damages, "
        "change business practices or stop selling certain products, and our reserves may not cover the "
        "losses.",
    ),
    (
        "Legal and Regulatory Risks",
        "Changes in tax law or disputes with tax authorities could affect our results.",
        "We are subject to taxes in the United States and many other jurisdictions. Changes in tax rates, "
        "in the rules for allocating profits among countries or in the interpretation of existing law "
        "could increase our effective tax rate.\n\nTax authorities regularly examine our returns, and the "
        "resolution of examinations could result in payments that differ from the amounts we have "
        "reserved.",
    ),
    (
        "Legal and Regulatory Risks",
        "Trade restrictions and tariffs could disrupt our supply chain and sales.",
        "Tariffs, export controls, sanctions and other trade measures could raise the cost of {input2}, "
        "limit our ability to sell to certain customers or countries, or require us to move production. "
        "Such measures can change quickly and with little notice.\n\nRetaliatory actions by other "
        "governments could reduce demand for our products in important markets, and compliance with "
        "overlapping regimes adds cost and complexity.",
    ),
    (
        "Legal and Regulatory Risks",
        "We may be unable to protect our intellectual property.",
        "We rely on patents, trademarks, trade secrets and contracts to protect our technology and brands. "
        "These protections may be challenged, narrowed or circumvented, and enforcement is expensive and "
        "uncertain, particularly in some foreign jurisdictions.\n\nThird parties may also claim that our "
        "products infringe their rights, which could require us to pay royalties, redesign products or "
        "stop selling them.",
    ),
    (
        "Financial Risks",
        "Fluctuations in foreign exchange rates could reduce our reported results.",
        "A substantial portion of our revenue and costs is denominated in currencies other than the "
        "dollar. A stronger dollar reduces the dollar value of our international sales and earnings, and "
        "currency movements can make our products less competitive in some markets.\n\nOur hedging "
        "program reduces but does not eliminate these effects, and hedges may not be available at "
        "acceptable cost.",
    ),
    (
        "Financial Risks",
        "Our indebtedness could limit our flexibility.",
        "We have outstanding senior notes and may borrow further under our credit facility and "
        "commercial paper program. Servicing this debt requires cash that would otherwise be available "
        "for investment or shareholder returns, and higher interest rates would increase the cost of "
        "refinancing.\n\nA downgrade of our credit ratings could raise borrowing costs and reduce our "
        "access to the commercial paper market.",
    ),
    (
        "Financial Risks",
        "We may record impairment charges on goodwill and other assets.",
        "We carry significant goodwill and intangible assets from past acquisitions. If the businesses "
        "they relate to perform worse than expected, or if market valuations fall, we may have to record "
        "impairment charges that reduce our earnings.\n\nSuch charges do not affect cash but could "
        "affect covenant calculations and investor perceptions of our prospects.",
    ),
    (
        "Financial Risks",
        "Our results may fluctuate from period to period.",
        "Our quarterly and annual results vary with the timing of large orders, seasonal patterns in "
        "{market}, promotional activity, input costs and one-time items. As a result, results for any "
        "period may not indicate future performance.\n\nIf our results fall short of the expectations of "
        "analysts or investors, the price of our shares could decline significantly.",
    ),
    (
        "Risks Related to Ownership of Our Stock",
        "The price of our shares may be volatile.",
        "The trading price of our shares may fluctuate widely in response to our results, announcements "
        "by us or our competitors, changes in analysts' estimates, market conditions in our industry and "
        "general economic and political events.\n\nBroad market declines can depress our share price "
        "regardless of our operating performance, and securities class-action litigation often follows "
        "periods of volatility.",
    ),
    (
        "Risks Related to Ownership of Our Stock",
        "We cannot guarantee that we will continue to pay dividends or repurchase shares.",
        "Dividends and repurchases are at the discretion of the board of directors and depend on our "
        "earnings, cash flows, capital needs and other factors. The board may reduce or suspend them at "
        "any time.\n\nA reduction could cause the price of our shares to fall, and repurchases at prices "
        "above the shares' later value would reduce the return on the capital used.",
    ),
    (
        "Risks Related to Our Business and Industry",
        "Public health events and geopolitical conflict could disrupt our markets.",
        "Outbreaks of disease, armed conflicts and political instability could reduce demand, close "
        "facilities, restrict travel and disrupt logistics for {input} and finished {product}. The "
        "effects can be sudden and last longer than expected.\n\nGovernment responses to such events may "
        "include restrictions on trade or business activity that affect us in ways we cannot predict.",
    ),
    (
        "Operational Risks",
        "Our reliance on third-party logistics and service providers exposes us to disruption.",
        "We depend on carriers, warehouse operators, contract manufacturers and cloud providers. Capacity "
        "shortages, labor disputes or financial difficulty at these providers could delay deliveries to "
        "{customers} and raise our costs.\n\nWe have limited control over their operations, and finding "
        "replacements on acceptable terms may take time.",
    ),
    (
        "Legal and Regulatory Risks",
        "Privacy and data-protection rules could restrict how we use information.",
        "Laws governing the collection, use and transfer of personal information continue to expand. "
        "Complying with differing regimes increases cost and may limit services we can offer to "
        "{customers}.\n\nA failure to comply, or a perception that we have mishandled data, could lead "
        "to penalties, litigation and loss of customer trust.",
    ),
    (
        "Risks Related to Our Business and Industry",
        "Pricing pressure from {customers} and {channels} could reduce our margins.",
        "Large buyers use their scale to negotiate lower prices, larger allowances and better terms. The "
        "growth of lower-priced alternatives, including those offered by {rivals}, strengthens their "
        "position.\n\nIf we cannot offset price concessions with productivity or mix improvements, our "
        "gross margin will decline.",
    ),
)
