package focusvalidate

// dataType is a column's data type and value format in the specification.
type dataType int

const (
	typeString   dataType = iota // String, StringHandling
	typeDecimal                  // Decimal, NumericFormat
	typeDateTime                 // Date/Time, DateTimeFormat: YYYY-MM-DDTHH:mm:ssZ
	typeCurrency                 // String, CurrencyFormat (ISO 4217 for national currencies)
	typeKeyValue                 // JSON, KeyValueFormat: an object of scalar values
	typeJSON                     // JSON whose structure this package checks elsewhere, or not at all
)

// level is a column's feature level.
type level int

const (
	conditional level = iota // present when the data generator supports the feature
	recommended
	mandatory
)

// column is one column of the FOCUS Cost and Usage dataset.
type column struct {
	typ   dataType
	level level
	// notNull: the column "MUST NOT be null" (whenever it is present).
	notNull bool
}

// The FOCUS versions the validator knows.
const (
	Version13 = "1.3"
	Version14 = "1.4"
)

// columnsFor returns the Cost and Usage columns of a FOCUS version, and
// false for a version the validator does not know.
func columnsFor(version string) (map[string]column, bool) {
	switch version {
	case Version13:
		return columns, true
	case Version14:
		return columns14, true
	}
	return nil, false
}

// columns are the FOCUS 1.3 Cost and Usage columns (the specification's
// columns.mdpp), with their content constraints. ProviderName and
// PublisherName are deprecated in 1.3 but still "MUST be present" and not
// null; HostProviderName is conditional ("MUST be present ... when the
// service provider and host provider are separate entities") and may be
// null for taxes and adjustments.
var columns = map[string]column{
	"AllocatedMethodDetails":             {typ: typeJSON},
	"AllocatedMethodId":                  {},
	"AllocatedResourceId":                {},
	"AllocatedResourceName":              {},
	"AllocatedTags":                      {typ: typeKeyValue},
	"AvailabilityZone":                   {level: recommended},
	"BilledCost":                         {typ: typeDecimal, level: mandatory, notNull: true},
	"BillingAccountId":                   {level: mandatory, notNull: true},
	"BillingAccountName":                 {level: mandatory},
	"BillingAccountType":                 {},
	"BillingCurrency":                    {typ: typeCurrency, level: mandatory, notNull: true},
	"BillingPeriodEnd":                   {typ: typeDateTime, level: mandatory, notNull: true},
	"BillingPeriodStart":                 {typ: typeDateTime, level: mandatory, notNull: true},
	"CapacityReservationId":              {},
	"CapacityReservationStatus":          {},
	"ChargeCategory":                     {level: mandatory, notNull: true},
	"ChargeClass":                        {level: mandatory},
	"ChargeDescription":                  {level: mandatory},
	"ChargeFrequency":                    {level: recommended, notNull: true},
	"ChargePeriodEnd":                    {typ: typeDateTime, level: mandatory, notNull: true},
	"ChargePeriodStart":                  {typ: typeDateTime, level: mandatory, notNull: true},
	"CommitmentDiscountCategory":         {},
	"CommitmentDiscountId":               {},
	"CommitmentDiscountName":             {},
	"CommitmentDiscountQuantity":         {typ: typeDecimal},
	"CommitmentDiscountStatus":           {},
	"CommitmentDiscountType":             {},
	"CommitmentDiscountUnit":             {},
	"ConsumedQuantity":                   {typ: typeDecimal},
	"ConsumedUnit":                       {},
	"ContractApplied":                    {typ: typeJSON},
	"ContractedCost":                     {typ: typeDecimal, level: mandatory, notNull: true},
	"ContractedUnitPrice":                {typ: typeDecimal},
	"EffectiveCost":                      {typ: typeDecimal, level: mandatory, notNull: true},
	"HostProviderName":                   {},
	"InvoiceId":                          {level: recommended},
	"InvoiceIssuerName":                  {level: mandatory, notNull: true},
	"ListCost":                           {typ: typeDecimal, level: mandatory, notNull: true},
	"ListUnitPrice":                      {typ: typeDecimal},
	"PricingCategory":                    {},
	"PricingCurrency":                    {typ: typeCurrency},
	"PricingCurrencyContractedUnitPrice": {typ: typeDecimal},
	"PricingCurrencyEffectiveCost":       {typ: typeDecimal},
	"PricingCurrencyListUnitPrice":       {typ: typeDecimal},
	"PricingQuantity":                    {typ: typeDecimal, level: mandatory},
	"PricingUnit":                        {level: mandatory},
	"ProviderName":                       {level: mandatory, notNull: true},
	"PublisherName":                      {level: mandatory, notNull: true},
	"RegionId":                           {},
	"RegionName":                         {},
	"ResourceId":                         {},
	"ResourceName":                       {},
	"ResourceType":                       {},
	"ServiceCategory":                    {level: mandatory, notNull: true},
	"ServiceName":                        {level: mandatory, notNull: true},
	"ServiceProviderName":                {level: mandatory, notNull: true},
	"ServiceSubcategory":                 {level: recommended, notNull: true},
	"SkuId":                              {},
	"SkuMeter":                           {},
	"SkuPriceDetails":                    {typ: typeKeyValue},
	"SkuPriceId":                         {},
	"SubAccountId":                       {},
	"SubAccountName":                     {},
	"SubAccountType":                     {},
	"TagDetails":                         {typ: typeJSON},
	"Tags":                               {typ: typeKeyValue},
}

// columns14 are the FOCUS 1.4 Cost and Usage columns, from the dataset's
// column presence list ("CostAndUsage MUST include ..."): 1.3's without
// ProviderName and PublisherName (removed) and TagDetails (not in the
// list), with HostProviderName mandatory, and two new conditional
// columns: CommitmentProgramEligibilityDetails (commitment programs) and
// InvoiceDetailId (payable invoices).
var columns14 = func() map[string]column {
	m := make(map[string]column, len(columns))
	for k, v := range columns {
		m[k] = v
	}
	delete(m, "ProviderName")
	delete(m, "PublisherName")
	delete(m, "TagDetails")
	m["HostProviderName"] = column{level: mandatory}
	m["CommitmentProgramEligibilityDetails"] = column{typ: typeJSON}
	m["InvoiceDetailId"] = column{}
	return m
}()

// splitColumns are the metrics whose values on the allocated charges of one
// origin charge add up to the origin's; every other column (dimensions
// and unit prices) must repeat the origin charge's value, except the
// allocation columns themselves and ContractApplied (a dimension and a
// metric at once).
var splitColumns = set("BilledCost", "EffectiveCost", "ListCost", "ContractedCost", "PricingQuantity", "ConsumedQuantity",
	"CommitmentDiscountQuantity", "PricingCurrencyEffectiveCost", "ContractApplied",
	"AllocatedMethodDetails", "AllocatedMethodId", "AllocatedResourceId", "AllocatedResourceName", "AllocatedTags")

// Allowed values of the enumerated columns.
var (
	chargeCategories  = set("Usage", "Purchase", "Tax", "Credit", "Adjustment")
	chargeFrequencies = set("One-Time", "Recurring", "Usage-Based")
	pricingCategories = set("Standard", "Dynamic", "Committed", "Other")
	serviceCategories = set("AI and Machine Learning", "Analytics", "Business Applications", "Compute", "Databases",
		"Developer Tools", "Multicloud", "Identity", "Integration", "Internet of Things", "Management and Governance",
		"Media", "Migration", "Mobile", "Networking", "Security", "Storage", "Web", "Other")
)

// requires lists, for a column, the columns its rules refer to: a file
// with the column must have them too (ConsumedUnit's nullability is
// defined by ConsumedQuantity, and so on).
var requires = map[string][]string{
	"AllocatedMethodDetails": {"AllocatedMethodId"},
	"AllocatedResourceId":    {"AllocatedMethodId", "AllocatedResourceName"},
	"AllocatedResourceName":  {"AllocatedResourceId"},
	"AllocatedTags":          {"AllocatedMethodId", "Tags"},
	"AllocatedMethodId":      {"AllocatedResourceId", "AllocatedResourceName"},
	"BillingAccountType":     {"BillingAccountId"},
	"ConsumedQuantity":       {"ConsumedUnit"},
	"ConsumedUnit":           {"ConsumedQuantity"},
	"ResourceName":           {"ResourceId"},
	"ResourceType":           {"ResourceId"},
	"SkuMeter":               {"SkuId"},
	"SkuPriceDetails":        {"SkuPriceId"},
	// SkuPriceDetails "MUST be present ... when the provider includes a
	// SkuPriceId".
	"SkuPriceId":     {"SkuId", "SkuPriceDetails"},
	"SubAccountName": {"SubAccountId"},
	"SubAccountId":   {"SubAccountName"},
	"SubAccountType": {"SubAccountId"},
}

func set(vs ...string) map[string]bool {
	m := make(map[string]bool, len(vs))
	for _, v := range vs {
		m[v] = true
	}
	return m
}
