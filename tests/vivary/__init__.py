"""vivary"""
